/**
 * A worker started without DATABASE_URL joins a running `settle dev`, the way the CLI does: its
 * settings (.settle/dev.json) give the database, Temporal, the task queue and the development
 * operator key's public half (so approvals and verdicts signed with it verify). Explicit settings win.
 */
import { readDevSettings, DEV_SETTINGS_FILE } from '../cli/dev-settings';
import { devWorkerOperatorKeys } from '../cli/operator-key';
import { loadOperatorSigner, OPERATOR_KEYS_VARIABLE } from '../activities/operator/operator-keys';
import { loadTemporalTarget } from '../client/connection';

/**
 * Fills `env` from a running settle dev when DATABASE_URL is unset; returns where it came from, or
 * null. Set, even empty, it is the operator's choice: an empty one is refused, never replaced.
 */
export function joinDevStack(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.DATABASE_URL !== undefined) return null;
  const dev = readDevSettings();
  if (!dev) return null;
  env.DATABASE_URL = dev.databaseUrl;
  if (!loadTemporalTarget({}, env).addressConfigured) {
    env.TEMPORAL_ADDRESS = dev.temporalAddress;
    env.TEMPORAL_NAMESPACE ||= dev.namespace;
  }
  env.TEMPORAL_TASK_QUEUE ||= dev.taskQueue;
  if (dev.operatorKeyFile) env[OPERATOR_KEYS_VARIABLE] = devWorkerOperatorKeys(loadOperatorSigner(`@${dev.operatorKeyFile}`), env);
  return DEV_SETTINGS_FILE;
}
