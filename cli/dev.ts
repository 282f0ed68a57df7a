/** `settle dev`: the stack plus a worker, up until Ctrl-C, with the settings printed. */
import { startStack } from '../stack/index';
import { loadTemporalTarget } from '../client/connection';
import { startObservability } from '../workers/observability';
import { createSettleWorker, DEFAULT_TASK_QUEUE } from '../workers/create-worker';
import { openDatabase, redactUrl } from '../activities/store/database';
import { EndpointStore } from '../activities/store/endpoint-store';
import { SettleClient } from '../client/index';
import { startConsole } from './console/server';
import { DEV_SETTINGS_FILE, removeDevSettings, writeDevSettings } from './dev-settings';
import { devOperatorKey, devOperatorKeys } from './operator-key';

export async function runDev(log: (line: string) => void): Promise<number> {
  const stack = await startStack({ log, persistent: true });
  try {
    // Before the worker's connection: Temporal's runtime (and its metrics exporter) is installed once per process.
    const observability = await startObservability({
      databaseUrl: stack.databaseUrl,
      target: loadTemporalTarget({ address: stack.temporal.address, namespace: stack.temporal.namespace }),
      level: 'WARN',
    });
    // The development operator key: its public half for the worker, the file for the CLI (dev settings).
    const operatorKey = devOperatorKey();
    const worker = await createSettleWorker({
      temporal: { address: stack.temporal.address, namespace: stack.temporal.namespace },
      databaseUrl: stack.databaseUrl,
      operatorKeys: devOperatorKeys(operatorKey.signer),
    });
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
        `  console              ${inbox.url} (calls that need a person; the URL carries its access token)`,
        `  metrics              ${observability.metricsUrl ?? '(set SETTLE_METRICS_PORT to serve /metrics)'}`,
        `  dynamic config       ${Object.entries(stack.temporal.dynamicConfig)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(' ')}`,
      ].join('\n'),
    );
    // The SDK shuts the worker down on SIGINT/SIGTERM; run() returns once it has drained.
    await worker.run();
    await inbox.close();
    await consoleClient.close();
    await consoleDb.destroy();
    await observability.close();
    return 0;
  } finally {
    removeDevSettings();
    await stack.stop();
  }
}
