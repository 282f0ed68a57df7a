/**
 * Builds a settle worker: the trajectory workflows plus the activities bound to an endpoint
 * store. Shared by the production entry point (worker.ts), `settle dev`, the demo and the tests.
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index';
import { EndpointStore } from '../activities/store/endpoint-store';
import { openDatabase } from '../activities/store/database';
import { loadKeyRing, type KeyRing } from '../activities/capability/keyring';

export const DEFAULT_TASK_QUEUE = 'settle';
export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface SettleWorkerOptions {
  temporalAddress: string;
  namespace?: string;
  taskQueue?: string;
  databaseUrl: string;
  /** A pre-built bundle (tests bundle once per run); otherwise workflows are bundled at start. */
  workflowBundle?: { code: string } | { codePath: string };
  identity?: string;
  /** Capability keys; default: SETTLE_CAP_KEYS when set (invalid keys fail the start). */
  keyRing?: KeyRing | null;
}

export interface SettleWorker {
  worker: Worker;
  /** Runs until shutdown() is called or a signal arrives; closes the pool and connection after. */
  run(): Promise<void>;
  shutdown(): void;
}

export async function createSettleWorker(options: SettleWorkerOptions): Promise<SettleWorker> {
  const identity = options.identity ?? `settle-worker@${os.hostname()}:${process.pid}`;
  const db = openDatabase(options.databaseUrl);
  const connection = await NativeConnection.connect({ address: options.temporalAddress });
  const workerOptions: WorkerOptions = {
    connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    identity,
    activities: createActivities({
      store: new EndpointStore(db),
      identity,
      keyRing: options.keyRing !== undefined ? options.keyRing : process.env.SETTLE_CAP_KEYS ? loadKeyRing() : null,
    }),
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
  };
  let worker: Worker;
  try {
    worker = await Worker.create(workerOptions);
  } catch (err) {
    await connection.close();
    await db.destroy();
    throw err;
  }
  return {
    worker,
    shutdown: () => worker.shutdown(),
    run: async () => {
      try {
        await worker.run();
      } finally {
        await connection.close();
        await db.destroy();
      }
    },
  };
}
