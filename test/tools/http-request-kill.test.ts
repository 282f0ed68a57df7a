/**
 * `http_request` in settle's trajectory workflow on real worker processes, against the
 * idempotent service (test/support/idempotent-http-server.ts). Worker A is SIGKILLed while its
 * request is parked between the effect and the response (`hold()`); worker B finds the call in
 * doubt, and the probe repeats the request with the same Idempotency-Key: 409 while the first is
 * still running, then the stored answer. The call ends settled by the probe, with exactly one
 * effect counted in the service's log. A host the capability does not grant is denied before any
 * request.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { fileURLToPath } from 'node:url';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { sign } from '../../activities/capability/signer';
import type { KeyRing } from '../../activities/capability/keyring';
import { startIdempotentServer, type IdempotentServer } from '../support/idempotent-http-server';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { killWorkerProcesses, startWorkerProcess as spawnWorker, type WorkerProcess } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);
const secret = crypto.randomBytes(32);
const ring: KeyRing = { signingKid: 'k1', keys: new Map([['k1', secret]]) };
let service: IdempotentServer;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  service = await startIdempotentServer();
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
});
afterAll(async () => {
  killWorkerProcesses();
  await connection?.close();
  await service?.close();
  await db.destroy();
});

function startWorker(taskQueue: string): WorkerProcess {
  return spawnWorker(WORKER, {
    TEMPORAL_TASK_QUEUE: taskQueue,
    SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
    SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    SETTLE_CAP_KEYS: `k1:${secret.toString('base64')}`,
    SETTLE_ALLOW_NO_CAPABILITY: '',
    // The worker's operator lets http_request reach the test's service on loopback, that port only.
    SETTLE_EGRESS_ALLOW_INTERNAL: `127.0.0.1:${service.port}`,
    SETTLE_FAILPOINTS: '',
  });
}

/** A trajectory of one http_request call, holding a capability to connect to `hostObject`. */
function startTrajectory(taskQueue: string, hostObject: string, args: Record<string, unknown>) {
  const workflowId = uniqueId('http-kill');
  const capability = sign(
    {
      v: 1,
      aud: workflowId,
      rights: ['connect'],
      objects: [hostObject],
      pred: { max_cost: 1, budget: 10 },
      exp: Date.now() + 3_600_000,
      parent: null,
      depth: 0,
    },
    ring,
  );
  return client.workflow.start('trajectoryWorkflow', {
    taskQueue,
    workflowId,
    args: [
      {
        workspace: tempWorkspace('http-kill'),
        leaseMs: 2_000,
        capability,
        turns: [{ turn: 0, calls: [{ call_id: 'pay', tool: 'http_request', args }] }],
      },
    ],
  });
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('http_request on a worker SIGKILLed between the effect and the response', { timeout: 180_000 }, () => {
  it('ends settled by the probe’s repeat with the same key: one effect in the service’s log; an ungranted host is denied before any request', async () => {
    const taskQueue = uniqueId('http-kill');
    const args = { method: 'POST', url: `${service.url}/v1/charges`, body: '{"amount":2500,"currency":"eur"}' };
    const held = service.hold();
    const a = startWorker(taskQueue);
    const handle = await startTrajectory(taskQueue, `host:127.0.0.1:${service.port}`, args);
    const effect = await held.reached; // the charge exists; its response is parked
    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');

    const b = startWorker(taskQueue);
    // Worker B's probe repeats the request while the first is still running: a concurrent duplicate.
    await waitFor(() => service.requests().some((r) => r.key === effect.key && r.status === 409), 90_000, 'a 409 to the repeat');
    held.release(); // the first request finishes; the service stores its answer for the key
    const result: TrajectoryResult = await handle.result();

    const [call] = result.calls;
    expect(call).toMatchObject({ tool: 'http_request', key: effect.key, state: 'COMPLETED', resolution: 'settled_by_probe' });
    expect(JSON.parse(call!.observation!.output)).toEqual({
      status: 200,
      headers: { 'content-type': 'application/json', 'idempotent-replayed': 'true' },
      body: { id: effect.id, object: 'charge', amount: 2500, currency: 'eur' },
    });
    expect(service.effects().filter((e) => e.key === effect.key)).toHaveLength(1);
    expect(service.requests().every((r) => r.key === effect.key)).toBe(true); // every request carried the call's key
    expect(await store.get(effect.key!)).toMatchObject({ state: 'COMPLETED', generation: 1, settledBy: 'probe:http_request' });

    // Same worker, a capability for another port of the host: denied before any request.
    const before = service.requests().length;
    const denied: TrajectoryResult = await (await startTrajectory(taskQueue, `host:127.0.0.1:${service.port + 1}`, args)).result();
    expect(denied.calls[0]).toMatchObject({ resolution: 'denied', state: 'NO_RECORD' });
    expect(denied.calls[0]!.observation!.error).toMatch(`host 127.0.0.1:${service.port} is not within host:127.0.0.1:${service.port + 1}`);
    expect(service.requests().length).toBe(before);

    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  });
});
