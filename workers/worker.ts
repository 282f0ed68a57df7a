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
import module from 'node:module';
import path from 'node:path';
import { SETTLE_DIR } from '../activities/state-dir';

// V8's code cache for every module loaded below (the Temporal SDK's most of all): a restarted
// worker reads their compiled code from disk instead of compiling it again, and a restart is part
// of every recovery from a dead worker (docs/deploying.md#worker-start-up). In the state
// directory, which only the worker's user writes (Node's default, in the shared temp directory,
// could be planted by another user), unless NODE_COMPILE_CACHE names one; NODE_DISABLE_COMPILE_CACHE=1
// turns it off. A directory it cannot write only costs the speed-up.
(module as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache?.(
  process.env.NODE_COMPILE_CACHE || path.join(SETTLE_DIR, 'compile-cache'),
);
const { main } = await import('./worker-main');
main();
