/**
 * `settle dev`: the stack plus a worker, up until Ctrl-C, with the settings printed. With
 * `--workers N` the workers are N processes of their own (a kill drill is `kill -9 PID`), each
 * started again when it dies and ended with `settle dev` however it ends
 * (stack/worker-processes.ts); without it, one worker runs inside this process. More workers join
 * from the settings file (`npm run worker` without DATABASE_URL: workers/dev-join.ts). Ctrl-C stops the workers first (they drain: a call in flight finishes and
 * writes its record), then Temporal, then PostgreSQL.
 */
import { startStack } from '../stack/index';
import { loadTemporalTarget } from '../client/connection';
import { startObservability } from '../workers/observability';
import { createSettleWorker, DEFAULT_TASK_QUEUE } from '../workers/create-worker';
import { openDatabase, redactUrl } from '../activities/store/database';
import { EndpointStore } from '../activities/store/endpoint-store';
import { SettleClient } from '../client/index';
import { startConsole } from './console/server';
import { CONSOLE_URL_FILE, removeConsoleUrl, writeConsoleUrl } from './console/url-file';
import { DEV_SETTINGS_FILE, removeDevSettings, writeDevSettings } from './dev-settings';
import { devOperatorKey, devOperatorKeys, devWorkerOperatorKeys } from './operator-key';
import { startWorkerProcesses, WORKER_DRAIN_MS, type WorkerProcesses } from '../stack/worker-processes';
import { GracefulShutdownPeriodExpiredError } from '@temporalio/worker';
import { OPERATOR_KEYS_VARIABLE, publicEntry } from '../activities/operator/operator-keys';
import { metricsPortFromEnv } from '../workers/metrics-server';
import { workerEventLine } from './dev-worker-events';
import { metricsHost, workerMetricsPorts, writeScrapeTargets, removeScrapeTargets, SCRAPE_TARGETS_FILE } from './dev-scrape-targets';

export interface DevOptions {
  /** Run this many workers as separate processes instead of one inside this process. */
  workers?: number;
}

export async function runDev(log: (line: string) => void, options: DevOptions = {}): Promise<number> {
  const stack = await startStack({ log, persistent: true });
  let processes: WorkerProcesses | null = null;
  let metricsPorts: number[] = [];
  try {
    // The development operator key: its public half for the workers, the file for the CLI (dev settings).
    const operatorKey = devOperatorKey();
    // Before the worker's connection: Temporal's runtime (and its metrics exporter) is installed once per process.
    const observability =
      options.workers === undefined
        ? await startObservability({
            databaseUrl: stack.databaseUrl,
            target: loadTemporalTarget({ address: stack.temporal.address, namespace: stack.temporal.namespace }),
            level: 'WARN',
          })
        : null;
    const worker =
      options.workers === undefined
        ? await createSettleWorker({
            temporal: { address: stack.temporal.address, namespace: stack.temporal.namespace },
            databaseUrl: stack.databaseUrl,
            operatorKeys: devOperatorKeys(operatorKey.signer),
            shutdownForceTimeMs: WORKER_DRAIN_MS,
          })
        : null;
    if (options.workers !== undefined) {
      const metricsBase = metricsPortFromEnv();
      metricsPorts = metricsBase === null ? [] : await workerMetricsPorts(metricsBase, options.workers, metricsHost());
      processes = startWorkerProcesses(
        options.workers,
        (slot) => ({
          TEMPORAL_ADDRESS: stack.temporal.address,
          TEMPORAL_NAMESPACE: stack.temporal.namespace,
          TEMPORAL_TASK_QUEUE: DEFAULT_TASK_QUEUE,
          DATABASE_URL: stack.databaseUrl,
          [OPERATOR_KEYS_VARIABLE]: devWorkerOperatorKeys(operatorKey.signer),
          // Worker i on base+i: the same port after a restart, so a scrape config stays right (0: any free port).
          ...(metricsBase !== null ? { SETTLE_METRICS_PORT: String(metricsPorts[slot]) } : {}),
        }),
        (event) => console.log(workerEventLine(event)),
      );
    }
    const settings = {
      temporalAddress: stack.temporal.address,
      namespace: stack.temporal.namespace,
      taskQueue: DEFAULT_TASK_QUEUE,
      databaseUrl: stack.databaseUrl,
      uiUrl: stack.temporal.uiUrl,
      pid: process.pid,
      operatorKeyFile: operatorKey.file,
    };
    writeDevSettings(settings);
    // Prometheus finds the workers' endpoints here (file_sd), the same ports after a restart.
    const scrapeTargets = processes
      ? metricsPorts.map((port) => `${metricsHost()}:${port}`)
      : observability?.metricsUrl
        ? [new URL(observability.metricsUrl).host]
        : [];
    if (scrapeTargets.length) writeScrapeTargets(scrapeTargets);
    // The console, signing with the development key: its own connections, closed after the worker.
    const consoleDb = openDatabase(stack.databaseUrl, { max: 2 });
    const consoleClient = await SettleClient.connect({
      address: settings.temporalAddress,
      namespace: settings.namespace,
      taskQueue: settings.taskQueue,
    });
    const inbox = await startConsole({
      client: consoleClient,
      store: new EndpointStore(consoleDb),
      signer: operatorKey.signer,
      keys: devOperatorKeys(operatorKey.signer),
      uiUrl: stack.temporal.uiUrl,
      namespace: settings.namespace,
    });
    writeConsoleUrl(inbox.url);
    console.log(
      [
        'settle dev is up (Ctrl-C stops everything).',
        `  Web UI               ${stack.temporal.uiUrl ?? '(disabled)'}`,
        `  TEMPORAL_ADDRESS     ${settings.temporalAddress}`,
        `  TEMPORAL_NAMESPACE   ${settings.namespace}`,
        `  TEMPORAL_TASK_QUEUE  ${settings.taskQueue}`,
        // Terminals are scrolled back, recorded and shared: the password stays in the owner-only settings file.
        `  DATABASE_URL         ${redactUrl(settings.databaseUrl)} (with its password in ${DEV_SETTINGS_FILE}, which the CLI reads)`,
        `  operator key         ${operatorKey.file} (operator ${operatorKey.signer.operator}: settle resolve/approve sign with it)`,
        // Public: your own worker accepts this operator with it (settle operator public-key prints it again).
        `  ${OPERATOR_KEYS_VARIABLE} ${publicEntry(operatorKey.signer)} (for your own worker)`,
        // Its URL holds the access token and the name its cookie is bound to: a file for the operator, not this log.
        `  console              open the URL in ${CONSOLE_URL_FILE} (owner-only; calls that need a person)`,
        processes
          ? `  workers              ${processes.pids.length} processes, pids ${processes.pids.join(' ')} (a kill drill: kill -9 PID; they end with settle dev)`
          : `  worker               in this process (settle dev --workers N runs N worker processes)`,
        scrapeTargets.length
          ? `  metrics              ${scrapeTargets.map((t) => `http://${t}/metrics`).join(' ')} (Prometheus file_sd: ${SCRAPE_TARGETS_FILE})`
          : `  metrics              (set SETTLE_METRICS_PORT to serve /metrics; with --workers N, worker i gets PORT+i)`,
        `  join                 npm run worker (in this checkout, without DATABASE_URL: it joins this stack from ${DEV_SETTINGS_FILE})`,
        `  dynamic config       ${Object.entries(stack.temporal.dynamicConfig)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(' ')}`,
      ].join('\n'),
    );
    // The order matters: a worker still finishing a call writes its record to PostgreSQL, so the
    // database goes last (its own process group keeps Ctrl-C from reaching it first, stack/).
    const stopping = () => console.log('settle dev: stopping: the workers finish their calls first, then Temporal stops, then PostgreSQL');
    process.once('SIGINT', stopping);
    process.once('SIGTERM', stopping);
    if (worker) {
      // The SDK shuts the worker down on SIGINT/SIGTERM; run() returns once it has drained, and
      // gives up after WORKER_DRAIN_MS, as settle dev does with worker processes.
      await worker.run().catch((err: unknown) => {
        const expired =
          err instanceof GracefulShutdownPeriodExpiredError || (err as Error)?.cause instanceof GracefulShutdownPeriodExpiredError;
        if (!expired) throw err;
        console.log(
          `settle dev: the worker's calls did not finish within ${WORKER_DRAIN_MS / 1000} s; stopping anyway (their records stay IN_FLIGHT until the lease sweeper takes them)`,
        );
      });
    } else {
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await processes?.stop();
    }
    await inbox.close();
    await consoleClient.close();
    await consoleDb.destroy();
    await observability?.close();
    return 0;
  } finally {
    await processes?.stop(5_000);
    removeDevSettings();
    removeScrapeTargets();
    removeConsoleUrl();
    await stack.stop();
  }
}
