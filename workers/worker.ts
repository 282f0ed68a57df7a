/**
 * Production worker entry point.
 *
 *   Temporal            the standard way (client/connection.ts): an envconfig profile
 *                       (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) or TEMPORAL_ADDRESS (default
 *                       127.0.0.1:7233), TEMPORAL_NAMESPACE ("default"), TEMPORAL_API_KEY,
 *                       TEMPORAL_TLS_* (TLS and mTLS)
 *   TEMPORAL_TASK_QUEUE task queue (default "settle")
 *   DATABASE_URL        Postgres holding the endpoint records (required, unless a `settle dev` runs:
 *                       then the worker joins it from its settings, as the CLI does: workers/dev-join.ts)
 *   SETTLE_WORKFLOW_BUNDLE  optional path of a pre-built workflow bundle (skips bundling at start; default:
 *                           the package's own, built by `npm run build`, when it matches the installed SDK)
 *   SETTLE_METRICS_PORT optional: serve Prometheus metrics at :PORT/metrics (workers/metrics-server.ts)
 *
 * Logs are JSON, one object per line on stdout, and nothing else is printed (stderr only carries
 * JSON lines too): settle's call events (with trajectory id, turn, call id, key and generation),
 * start-up warnings and the Temporal SDK's own lines. (`npm run worker` adds npm's two-line banner
 * before the process starts; `npm run -s worker` leaves it out.)
 *
 * Waits for PostgreSQL with backoff (logging it), checks it keeps what settle requires of a
 * record store (docs/deploying.md: a refusal exits 1 with one line naming the setting), and runs
 * migrations on start (safe with many workers starting at once); survives PostgreSQL restarts while running. SIGTERM/SIGINT drain the
 * worker gracefully: running activities finish or heartbeat out, then the process exits.
 */
import { isTransient, migrateToLatest, redactUrl, waitForDatabase } from '../activities/store/database';
import { jsonLine } from '../activities/observability/log';
import { describeTarget, loadTemporalTarget } from '../client/connection';
import { createSettleWorker } from './create-worker';
import { databaseTlsFinding, readDatabaseTls } from '../core/database-tls';
import { temporalTlsFinding } from '../client/tls-finding';
import { checkRecordStoreAtStart, RecordStoreRefused } from './record-store-check';
import type { PoolingMode } from '../core/record-store-requirements';
import { startObservability } from './observability';
import { errorMessage, InputError } from '../core/errors';
import { joinDevStack } from './dev-join';

async function main(): Promise<void> {
  const joined = joinDevStack();
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.error(
      jsonLine(
        'error',
        'DATABASE_URL: must be set to the Postgres URL that holds the endpoint records (or run `settle dev`, which a worker then joins)',
      ),
    );
    process.exit(2);
  }
  const observability = await startObservability({ databaseUrl, target: loadTemporalTarget() });
  const log = (line: string) => observability.log('info', `settle worker: ${line}`);
  if (joined) log(`joining the running settle dev (its settings: ${joined})`);
  const warn = (line: string) => observability.log('warn', line);
  // How the record store and Temporal are reached, one line each (a warning, with its fix, when unsafe).
  for (const { level, line } of [databaseTlsLine(databaseUrl), temporalTlsFinding(loadTemporalTarget())])
    observability.log(level === 'ok' ? 'info' : 'warn', `settle worker: ${line}`);

  // The record store is made ready (waited for, checked, migrated) while Temporal is reached and
  // the worker is made; createSettleWorker creates no worker, so nothing polls, before it is.
  const worker = await createSettleWorker({
    databaseUrl,
    recordStoreChecked: readyRecordStore(databaseUrl, log, warn),
    // Start-up warnings (no per-call cgroup, development mode, the record store's) as JSON lines like every other.
    warn,
  });
  // The SDK shuts the worker down on SIGINT/SIGTERM by default; run() returns once it has drained.
  observability.log('info', 'settle worker: polling', {
    target: describeTarget(worker.target),
    database: redactUrl(databaseUrl),
    metricsUrl: observability.metricsUrl,
    // Workspace calls of the workspaces on this host come on its own queue (docs/deploying.md#workers-on-several-hosts).
    host: worker.host.id,
    hostQueue: worker.host.queue,
    // Since the process started: what a restart adds to a recovery (docs/deploying.md#worker-start-up).
    startupMs: Math.round(performance.now()),
  });
  await worker.run();
  await observability.close();
  observability.log('info', 'settle worker: stopped');
}

/**
 * Waits for PostgreSQL (it may start after the worker, or restart while it starts), checks it keeps
 * what settle requires of a record store, then migrates; returns the pooler mode the check found.
 */
async function readyRecordStore(databaseUrl: string, log: (line: string) => void, warn: (line: string) => void): Promise<PoolingMode> {
  let recordStoreChecked: PoolingMode | undefined;
  for (let attempt = 0; ; attempt++) {
    await waitForDatabase(databaseUrl, log);
    try {
      // Before the migrations: a standby or a record store that could forget a claim is refused in one line.
      recordStoreChecked ??= await checkRecordStoreAtStart(databaseUrl, warn, process.env, log);
      await migrateToLatest(databaseUrl);
      return recordStoreChecked;
    } catch (err) {
      // A refusal, or a bad SETTLE_RECORD_DURABILITY, is the operator's to fix: waiting cannot.
      if (!(err instanceof Error) || err instanceof RecordStoreRefused || err instanceof InputError || !isTransient(err) || attempt >= 10)
        throw err;
      log(`migration interrupted (${err.message}); waiting for the database again`);
    }
  }
}

/** DATABASE_URL's TLS line; a string that is not a URL (pg reads some) is said to be unread, not fatal here. */
function databaseTlsLine(url: string): ReturnType<typeof databaseTlsFinding> {
  try {
    return databaseTlsFinding(readDatabaseTls(url, process.env));
  } catch {
    return {
      level: 'warn',
      line: 'database tls: DATABASE_URL is not a URL, so its TLS settings were not read: use postgres://…?sslmode=verify-full',
    };
  }
}

main().catch((err) => {
  console.error(jsonLine('error', `settle worker: ${errorMessage(err)}`));
  process.exit(1);
});
