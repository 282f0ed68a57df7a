/**
 * Where the CLI finds Postgres and Temporal: the environment (DATABASE_URL, TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE), else the settings of a running `settle dev`.
 */
import { EndpointStore } from '../activities/store/endpoint-store';
import { openDatabase } from '../activities/store/database';
import { SettleClient, DEFAULT_TASK_QUEUE } from '../client/index';
import { readDevSettings } from './dev-settings';
import { UsageError } from './usage-error';

export async function withStore<T>(fn: (store: EndpointStore) => Promise<T>): Promise<T> {
  const url = process.env.DATABASE_URL || readDevSettings()?.databaseUrl;
  if (!url) throw new UsageError('DATABASE_URL: must be set (or run `settle dev`, whose settings the CLI then finds)');
  const db = openDatabase(url, { max: 1 });
  try {
    return await fn(new EndpointStore(db));
  } finally {
    await db.destroy();
  }
}

export async function withClient<T>(fn: (client: SettleClient) => Promise<T>): Promise<T> {
  const dev = readDevSettings();
  const address = process.env.TEMPORAL_ADDRESS || dev?.temporalAddress;
  if (!address) throw new UsageError('TEMPORAL_ADDRESS: must be set (or run `settle dev`, whose settings the CLI then finds)');
  const client = await SettleClient.connect({
    address,
    namespace: process.env.TEMPORAL_NAMESPACE || dev?.namespace || 'default',
    taskQueue: process.env.TEMPORAL_TASK_QUEUE || dev?.taskQueue || DEFAULT_TASK_QUEUE,
  });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
