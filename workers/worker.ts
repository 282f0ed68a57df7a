/**
 * Production worker entry point.
 *
 *   Temporal            the standard way (client/connection.ts): an envconfig profile
 *                       (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) or TEMPORAL_ADDRESS (default
 *                       127.0.0.1:7233), TEMPORAL_NAMESPACE ("default"), TEMPORAL_API_KEY,
 *                       TEMPORAL_TLS_* (TLS and mTLS)
 *   TEMPORAL_TASK_QUEUE task queue (default "settle")
 *   DATABASE_URL        Postgres holding the endpoint records (required)
 *   SETTLE_WORKFLOW_BUNDLE  optional path of a pre-built workflow bundle (skips bundling at start)
 *
 * Runs migrations on start (safe with many workers starting at once). SIGTERM/SIGINT drain the
 * worker gracefully: running activities finish or heartbeat out, then the process exits.
 */
import { assertReachable, migrateToLatest, redactUrl } from '../activities/store/database';
import { describeTarget } from '../client/connection';
import { createSettleWorker } from './create-worker';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.error('DATABASE_URL: must be set to the Postgres URL that holds the endpoint records');
    process.exit(2);
  }
  await assertReachable(databaseUrl);
  await migrateToLatest(databaseUrl);
  const bundlePath = process.env.SETTLE_WORKFLOW_BUNDLE;
  const worker = await createSettleWorker({
    databaseUrl,
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : {}),
  });
  // The SDK shuts the worker down on SIGINT/SIGTERM by default; run() returns once it has drained.
  console.log(`settle worker: ${describeTarget(worker.target)} db=${redactUrl(databaseUrl)}`);
  await worker.run();
  console.log('settle worker: stopped');
}

main().catch((err) => {
  console.error(`settle worker: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
