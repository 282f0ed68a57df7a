/** Test helpers on top of the stack started by global-setup (real Temporal, real Postgres). */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { Kysely } from 'kysely';
import { openDatabase } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import type { SettleDatabase } from '../../activities/store/schema';
import { createSettleWorker } from '../../workers/create-worker';
import { handOverWorkspace } from '../../activities/tools/sandbox-identity';
import { installRuntime } from '../../workers/runtime';
import type { KeyRing } from '../../activities/capability/keyring';
import type { OperatorKeys } from '../../activities/operator/operator-keys';
import { makeWorkerPolicy, modelEndpoint, type WorkerPolicy } from '../../activities/worker-policy';
import './provided-context';

export function uniqueId(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

export function tempWorkspace(prefix = 'ws'): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `settle-${prefix}-`)));
  handOverWorkspace(dir); // as root, the sandbox runs commands as the workspace's (unprivileged) owner
  return dir;
}

export function openTestDb(max = 10): Kysely<SettleDatabase> {
  return openDatabase(inject('databaseUrl'), { max });
}

export function testStore(db: Kysely<SettleDatabase>): EndpointStore {
  return new EndpointStore(db);
}

export interface RunningWorker {
  client: Client;
  taskQueue: string;
  /** The worker's policy, as its operator would set it. */
  policy: WorkerPolicy;
  /** Lets this worker call a model server started by the test (SETTLE_MODEL_ENDPOINTS, for a port chosen at run time). */
  allowModelEndpoint(baseUrl: string): void;
  stop(): Promise<void>;
}

/** The test workers' workspace root: the OS temp dir, where tempWorkspace() creates workspaces. */
export function testWorkspaceRoot(): string {
  return fs.realpathSync(os.tmpdir());
}

/**
 * A real worker (workflows from the run's bundle) on its own task queue, plus a client. Its
 * policy: workspaces under the OS temp dir (tempWorkspace), model keys only from TEST_MODEL_KEY,
 * model endpoints only those a test allows; everything else as the defaults (no development mode).
 * Operator keys: SETTLE_OPERATOR_KEYS (the on-call operator's, test/support/operator.ts) unless given.
 */
export async function startTestWorker(
  options: { keyRing?: KeyRing | null; policy?: Partial<WorkerPolicy>; operatorKeys?: OperatorKeys | null } = {},
): Promise<RunningWorker> {
  installRuntime('WARN');
  const taskQueue = uniqueId('tq');
  const policy = makeWorkerPolicy({
    workspaceRoot: testWorkspaceRoot(),
    modelEndpoints: [],
    modelKeyEnvs: ['TEST_MODEL_KEY'],
    allowNoCapability: false,
    ...options.policy,
  });
  const worker = await createSettleWorker({
    temporal: { address: inject('temporalAddress'), taskQueue },
    databaseUrl: inject('databaseUrl'),
    workflowBundle: { codePath: inject('workflowBundlePath') },
    keyRing: options.keyRing ?? null,
    // Default: the on-call operator's public key, from the environment global-setup provisions.
    ...(options.operatorKeys !== undefined ? { operatorKeys: options.operatorKeys } : {}),
    policy,
    warn: () => {},
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  return {
    client,
    taskQueue,
    policy,
    allowModelEndpoint: (baseUrl) => (policy.modelEndpoints as string[]).push(modelEndpoint(baseUrl)),
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** A key ring for tests: `k1` signs, `k0` (an older key) still verifies. */
export function testKeyRing(): KeyRing {
  return {
    signingKid: 'k1',
    keys: new Map([
      ['k1', crypto.randomBytes(32)],
      ['k0', crypto.randomBytes(32)],
    ]),
  };
}
