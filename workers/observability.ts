/**
 * A worker process's observability, set up before its first Temporal connection: Temporal's
 * runtime (installed once per process, with its Prometheus exporter on a loopback port when
 * metrics are on), settle's call events as JSON log lines, and the /metrics endpoint.
 */
import type { LogLevel } from '@temporalio/worker';
import { collectMetrics } from '../activities/observability/metrics';
import { jsonLine, logCallEvents } from '../activities/observability/log';
import { writeStdoutLine } from '../activities/observability/stdout-lines';
import type { TemporalTarget } from '../client/connection';
import { freePort } from '../stack/ports';
import { metricsPortFromEnv, startMetricsServer } from './metrics-server';
import { installRuntime } from './runtime';

export interface Observability {
  /** The scrape URL, when SETTLE_METRICS_PORT is set. */
  metricsUrl: string | null;
  /** One JSON log line (stdout). */
  log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void;
  close(): Promise<void>;
}

export async function startObservability(options: {
  databaseUrl: string;
  target: TemporalTarget;
  level?: LogLevel;
  env?: NodeJS.ProcessEnv;
}): Promise<Observability> {
  const port = metricsPortFromEnv(options.env);
  const temporalPort = port === null ? null : await freePort();
  const fresh = installRuntime(options.level ?? 'INFO', {
    jsonLogs: true,
    ...(temporalPort !== null ? { metricsBindAddress: `127.0.0.1:${temporalPort}` } : {}),
  });
  const log: Observability['log'] = (level, msg, fields = {}) => writeStdoutLine(jsonLine(level, msg, fields));
  if (!fresh && port !== null) log('warn', "Temporal's runtime was installed earlier in this process: its metrics are not exported");
  const stopLogs = logCallEvents();
  const server =
    port === null
      ? null
      : await startMetricsServer({
          port,
          ...(process.env.SETTLE_METRICS_HOST ? { host: process.env.SETTLE_METRICS_HOST } : {}),
          metrics: collectMetrics(),
          temporalMetricsUrl: fresh && temporalPort !== null ? `http://127.0.0.1:${temporalPort}/metrics` : null,
          databaseUrl: options.databaseUrl,
          target: options.target,
        });
  if (server) log('info', 'metrics endpoint up', { metricsUrl: server.url });
  return {
    metricsUrl: server?.url ?? null,
    log,
    close: async () => {
      stopLogs();
      await server?.close();
    },
  };
}
