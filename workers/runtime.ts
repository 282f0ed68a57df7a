/**
 * Process-wide Temporal runtime settings; call before the first worker or connection. Temporal's
 * Runtime can be installed once per process: the first call decides, later calls change nothing
 * and say so (returns false).
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { jsonLine } from '../activities/observability/log';
import { defaultWorkerIdentity } from '../activities/observability/worker-identity';
import { writeStdoutLine } from '../activities/observability/stdout-lines';
import { registerWorkerServiceUrl } from '../activities/tools/egress-policy';

const WORKER = defaultWorkerIdentity();

let installed = false;

export interface RuntimeOptions {
  /** Serve Temporal's runtime (Core SDK) metrics in Prometheus format on this host:port. */
  metricsBindAddress?: string;
  /** The SDK's own log lines as JSON, one per line on stdout (as settle's call events). */
  jsonLogs?: boolean;
  /**
   * Signals on which Temporal's runtime stops every worker itself (its default: SIGINT, SIGTERM,
   * SIGQUIT, SIGUSR2); [] for a process that stops its worker in its own order.
   */
  shutdownSignals?: NodeJS.Signals[];
}

export function installRuntime(level: LogLevel = 'WARN', options: RuntimeOptions = {}): boolean {
  if (installed) return false;
  installed = true;
  const logger = options.jsonLogs
    ? new DefaultLogger(level, (entry) => {
        // Named like settle's own call lines (activities/observability/log.ts): which worker process said it.
        writeStdoutLine(
          jsonLine(entry.level.toLowerCase(), entry.message, { source: 'temporal', ...entry.meta, worker: WORKER, pid: process.pid }),
        );
      })
    : new DefaultLogger(level);
  // A service of the worker's own: never reachable through a sandbox's egress proxy.
  if (options.metricsBindAddress) registerWorkerServiceUrl(`metrics://${options.metricsBindAddress}`, 9464);
  const metrics = options.metricsBindAddress
    ? { metrics: { prometheus: { bindAddress: options.metricsBindAddress, countersTotalSuffix: true } } }
    : {};
  // JSON logs: the SDK's native (Core) lines go through the same logger instead of the console.
  const logging = options.jsonLogs ? { logging: { filter: { core: 'WARN' as const, other: 'ERROR' as const }, forward: {} } } : {};
  const signals = options.shutdownSignals ? { shutdownSignals: options.shutdownSignals } : {};
  Runtime.install({ logger, telemetryOptions: { ...metrics, ...logging }, ...signals });
  return true;
}
