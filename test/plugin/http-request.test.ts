/**
 * The built-in http_request from a team's own workflow (settled<typeof teamTools | BuiltIns>()),
 * against the real stack and a service that behaves like Stripe's idempotent endpoints: the
 * capability given to settled({ capability }) is the call's reach (its host: objects), the derived
 * key reaches the service as Idempotency-Key; without a capability, or to a host it does not
 * grant, nothing is sent. The built-ins that need a workspace stay refused.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { SettlePlugin } from '../../api/worker';
import { callKey } from '../../api/testing';
import { sign } from '../../activities/capability/signer';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import { installRuntime } from '../../workers/runtime';
import { openTestDb, testKeyRing, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { startIdempotentServer, type IdempotentServer } from '../support/idempotent-http-server';
import { teamTools } from './fixtures/tools';
import type { chargeOverHttp, teamWorkflow } from './fixtures/workflows';

const WORKFLOWS = fileURLToPath(new URL('./fixtures/workflows.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);
const ring = testKeyRing();
const taskQueue = uniqueId('team-http');
const savedAllow = process.env.SETTLE_EGRESS_ALLOW_INTERNAL;
let service: IdempotentServer;
let client: Client;
let clientConnection: Connection;
let workerConnection: NativeConnection;
let worker: { worker: Worker; running: Promise<void> } | null = null;

beforeAll(async () => {
  installRuntime('WARN');
  service = await startIdempotentServer();
  // As the worker's operator: the service's loopback address and port may be reached.
  process.env.SETTLE_EGRESS_ALLOW_INTERNAL = `127.0.0.1:${service.port}`;
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: quietLogger });
  workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const created = await Worker.create({
    plugins: [
      new SettlePlugin({
        tools: [...teamTools],
        databaseUrl: inject('databaseUrl'),
        keyRing: ring,
        policy: makeWorkerPolicy({ workspaceRoot: testWorkspaceRoot(), modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: false }),
        warn: () => {},
      }),
    ],
    connection: workerConnection,
    taskQueue,
    workflowBundle: { code: bundle.code },
  });
  worker = { worker: created, running: created.run() };
  clientConnection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection: clientConnection });
}, 120_000);

afterAll(async () => {
  worker?.worker.shutdown();
  await worker?.running;
  await workerConnection?.close();
  await clientConnection?.close();
  await service?.close();
  await db.destroy();
  if (savedAllow === undefined) delete process.env.SETTLE_EGRESS_ALLOW_INTERNAL;
  else process.env.SETTLE_EGRESS_ALLOW_INTERNAL = savedAllow;
});

/** A capability for `workflowId` with the connect right to these host: objects. */
function capability(workflowId: string, hosts: string[]) {
  return sign(
    {
      v: 1,
      aud: workflowId,
      rights: ['connect'],
      objects: hosts,
      pred: { max_cost: 5, budget: 100 },
      exp: Date.now() + 3_600_000,
      parent: null,
      depth: 0,
    },
    ring,
  );
}

function charge(workflowId: string, amount: number, options: Parameters<typeof chargeOverHttp>[2] = {}) {
  return client.workflow.execute<typeof chargeOverHttp>('chargeOverHttp', {
    workflowId,
    taskQueue,
    args: [`${service.url}/v1/charges`, amount, options],
  });
}

const bodyOf = (amount: number) => JSON.stringify({ amount });

describe('http_request from a team workflow', () => {
  it('with a capability granting the host: the derived key reaches the service as Idempotency-Key, one effect', async () => {
    const workflowId = uniqueId('team-http');
    const before = service.effects().length;
    const result = await charge(workflowId, 100, { capability: capability(workflowId, [`host:127.0.0.1:${service.port}`]) });
    const key = callKey({
      workflowId,
      callId: 'charge',
      tool: 'http_request',
      args: { method: 'POST', url: `${service.url}/v1/charges`, body: bodyOf(100), headers: [] },
    });
    expect(result).toMatchObject({ key, resolution: 'executed', state: 'COMPLETED' });
    const effects = service.effects().slice(before);
    expect(effects).toEqual([{ id: expect.any(String), collection: 'charges', key, body: { amount: 100 } }]);
    expect(result.result).toMatchObject({ status: 200, body: { id: effects[0]!.id, object: 'charge', amount: 100 } });
    expect(await store.get(key)).toMatchObject({ state: 'COMPLETED', intent: { grant: `host:127.0.0.1:${service.port}` } });
  });

  it('without a capability: refused before any request, naming what is missing', async () => {
    const before = service.requests().length;
    await expect(charge(uniqueId('team-http-none'), 1)).rejects.toMatchObject({
      cause: {
        type: 'SettleCapabilityRequired',
        message: expect.stringMatching(
          /^http_request needs a capability: pass settled\(\{ capability \}\) one with the connect right and host: objects/,
        ),
      },
    });
    expect(service.requests().length).toBe(before);
  });

  it('to a host the capability does not grant: denied, no record, no request', async () => {
    const workflowId = uniqueId('team-http-other');
    const before = service.requests().length;
    const result = await charge(workflowId, 2, {
      capability: capability(workflowId, [`host:127.0.0.1:${service.port + 1}`, 'host:api.example.com']),
    });
    expect(result).toMatchObject({ resolution: 'denied', state: 'NO_RECORD' });
    expect(result.observation.error).toMatch(/denied by capability \(objects\)/);
    expect(await store.get(result.key)).toBeUndefined();
    expect(service.requests().length).toBe(before);
  });

  it('still refuses the built-ins that need a workspace, saying where they run', async () => {
    await expect(
      client.workflow.execute<typeof teamWorkflow>('teamWorkflow', {
        workflowId: uniqueId('team-http-view'),
        taskQueue,
        args: [[{ tool: 'file_view' as 'count_lines', args: { path: 'x' }, callId: 'v' }]],
      }),
    ).rejects.toMatchObject({
      cause: {
        message: expect.stringMatching(/^file_view is a built-in tool that needs a workspace: it runs in settle's trajectory workflow/),
      },
    });
  });
});

const quietLogger = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
