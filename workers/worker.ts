/**
 * Production worker entry point.
 *
 *   TEMPORAL_ADDRESS    host:port of the Temporal frontend      (default 127.0.0.1:7233)
 *   TEMPORAL_NAMESPACE  namespace                                (default "default")
 *   TEMPORAL_TASK_QUEUE task queue                               (default "settle")
 *   DATABASE_URL        Postgres holding the endpoint records    (required)
 *   SETTLE_WORKFLOW_BUNDLE  optional path of a pre-built workflow bundle (skips bundling at start)
 *
 * Waits for PostgreSQL with backoff (logging it) and runs migrations on start (safe with many
 * workers starting at once); survives PostgreSQL restarts while running. SIGTERM/SIGINT drain the
 * worker gracefully: running activities finish or heartbeat out, then the process exits.
 */
import { isTransient, migrateToLatest, redactUrl, waitForDatabase } from '../activities/store/database';
import { createSettleWorker, DEFAULT_TASK_QUEUE } from './create-worker';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.error('DATABASE_URL: must be set to the Postgres URL that holds the endpoint records');
    process.exit(2);
  }
  const temporalAddress = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const taskQueue = process.env.TEMPORAL_TASK_QUEUE ?? DEFAULT_TASK_QUEUE;

  // PostgreSQL may start after the worker, or restart while it starts: wait for it, saying so.
  const log = (line: string) => console.log(`settle worker: ${line}`);
  for (let attempt = 0; ; attempt++) {
    await waitForDatabase(databaseUrl, log);
    try {
      await migrateToLatest(databaseUrl);
      break;
    } catch (err) {
      if (!(err instanceof Error) || !isTransient(err) || attempt >= 10) throw err;
      log(`migration interrupted (${err.message}); waiting for the database again`);
    }
  }
  const bundlePath = process.env.SETTLE_WORKFLOW_BUNDLE;
  const worker = await createSettleWorker({
    temporalAddress,
    namespace,
    taskQueue,
    databaseUrl,
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : {}),
  });
  // Worker.runUntil-style signal handling: the SDK already shuts down on SIGINT/SIGTERM by default.
  console.log(`settle worker: ${temporalAddress} namespace=${namespace} queue=${taskQueue} db=${redactUrl(databaseUrl)}`);
  await worker.run();
  console.log('settle worker: stopped');
}

main().catch((err) => {
  console.error(`settle worker: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
