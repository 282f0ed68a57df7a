/**
 * Builds a settle worker: the trajectory workflows plus the activities bound to an endpoint
 * store. Shared by the production entry point (worker.ts), `settle dev`, the demo and the tests.
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { loadTemporalTarget, type TargetOverrides, type TemporalTarget } from '../client/connection';
import { createActivities } from '../activities/index';
import { EndpointStore } from '../activities/store/endpoint-store';
import { openDatabase } from '../activities/store/database';
import { loadKeyRing, type KeyRing } from '../activities/capability/keyring';

export { DEFAULT_TASK_QUEUE } from '../client/connection';
export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface SettleWorkerOptions {
  /**
   * Overrides on top of the standard Temporal configuration (client/connection.ts: envconfig
   * profile and TEMPORAL_* environment, TLS and API keys included).
   */
  temporal?: TargetOverrides;
  databaseUrl: string;
  /** A pre-built bundle (tests bundle once per run); otherwise workflows are bundled at start. */
  workflowBundle?: { code: string } | { codePath: string };
  identity?: string;
  /** Capability keys; default: SETTLE_CAP_KEYS when set (invalid keys fail the start). */
  keyRing?: KeyRing | null;
}

export interface SettleWorker {
  worker: Worker;
  /** Where it polls (for logs: no secrets). */
  target: TemporalTarget;
  /** Runs until shutdown() is called or a signal arrives; closes the pool and connection after. */
  run(): Promise<void>;
  shutdown(): void;
}

export async function createSettleWorker(options: SettleWorkerOptions): Promise<SettleWorker> {
  const identity = options.identity ?? `settle-worker@${os.hostname()}:${process.pid}`;
  const db = openDatabase(options.databaseUrl);
  const target = loadTemporalTarget(options.temporal);
  const connection = await NativeConnection.connect(target.connectionOptions);
  const workerOptions: WorkerOptions = {
    connection,
    namespace: target.namespace,
    taskQueue: target.taskQueue,
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
    target,
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
