/** `settle dev`: the stack plus a worker, up until Ctrl-C, with the settings printed. */
import { startStack } from '../stack/index';
import { loadTemporalTarget } from '../client/connection';
import { startObservability } from '../workers/observability';
import { createSettleWorker, DEFAULT_TASK_QUEUE } from '../workers/create-worker';
import { redactUrl } from '../activities/store/database';
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
        `  metrics              ${observability.metricsUrl ?? '(set SETTLE_METRICS_PORT to serve /metrics)'}`,
        `  dynamic config       ${Object.entries(stack.temporal.dynamicConfig)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(' ')}`,
      ].join('\n'),
    );
    // The SDK shuts the worker down on SIGINT/SIGTERM; run() returns once it has drained.
    await worker.run();
    await observability.close();
    return 0;
  } finally {
    removeDevSettings();
    await stack.stop();
  }
}
