/**
 * settled() from a team's workflow, against the real stack: an A3 call waits for `settle approve`
 * (the trajectory's approveCall update, the operator's credential checked by the worker) and
 * records who decided; a capability passed to settled() authorizes every call as a trajectory's
 * are, by what the tool's definition says it accesses, and a worker holding capability keys
 * refuses calls without one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection, WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { SettlePlugin, type SettlePluginOptions } from '../../api/worker';
import { callKey } from '../../api/testing';
import { callsQuery, pendingApprovalsQuery, waitingForQuery, type CallReport } from '../../api/workflow';
import { SettleClient } from '../../client/index';
import { sign } from '../../activities/capability/signer';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import type { KeyRing } from '../../activities/capability/keyring';
import { installRuntime } from '../../workers/runtime';
import { openTestDb, tempWorkspace, testKeyRing, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { approval, TEST_OPERATOR } from '../support/operator';
import { runSettle } from '../support/cli';
import { teamTools } from './fixtures/tools';
import type { teamWorkflow } from './fixtures/workflows';

const WORKFLOWS = fileURLToPath(new URL('./fixtures/workflows.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);
const ring = testKeyRing();
const approvalQueue = uniqueId('team-a3');
const keyedQueue = uniqueId('team-cap');
let client: Client;
let clientConnection: Connection;
let workerConnection: NativeConnection;
const workers: { worker: Worker; running: Promise<void> }[] = [];

function plugin(options: Partial<SettlePluginOptions>) {
  return new SettlePlugin({
    tools: [...teamTools],
    databaseUrl: inject('databaseUrl'),
    policy: makeWorkerPolicy({ workspaceRoot: testWorkspaceRoot(), modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: false }),
    warn: () => {},
    ...options,
  });
}

beforeAll(async () => {
  installRuntime('WARN');
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: quietLogger });
  workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  // The operator raises append_line to A3 on this worker: each call needs an approval.
  for (const [taskQueue, options] of [
    [approvalQueue, { levels: { append_line: 'A3' }, keyRing: null }],
    [keyedQueue, { keyRing: ring }],
  ] as const) {
    const worker = await Worker.create({
      plugins: [plugin(options)],
      connection: workerConnection,
      taskQueue,
      workflowBundle: { code: bundle.code },
    });
    workers.push({ worker, running: worker.run() });
  }
  clientConnection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection: clientConnection });
}, 120_000);

afterAll(async () => {
  for (const { worker } of workers) worker.shutdown();
  await Promise.all(workers.map((w) => w.running));
  await workerConnection?.close();
  await clientConnection?.close();
  await db.destroy();
});

type Calls = Parameters<typeof teamWorkflow>[0];
type Options = Parameters<typeof teamWorkflow>[1];

function startTeam(taskQueue: string, workflowId: string, calls: Calls, options: Options = {}) {
  return client.workflow.start<typeof teamWorkflow>('teamWorkflow', { workflowId, taskQueue, args: [calls, options] });
}

/** The call's report once it waits for approval. */
async function awaitingApproval(handle: WorkflowHandle, callId: string): Promise<CallReport> {
  for (let i = 0; i < 200; i++) {
    const report = (await handle.query(callsQuery)).find((c) => c.callId === callId);
    if (report?.resolution === 'awaiting_approval') return report;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${callId} never waited for approval`);
}

describe('an A3 call settled from a team workflow', () => {
  it('waits for settle approve, runs once approved and records the approver; a denied call never touches its record', async () => {
    const file = path.join(tempWorkspace('team-a3'), 'log.txt');
    const workflowId = uniqueId('team-a3');
    const calls: Calls = [
      { tool: 'append_line', args: { file, text: 'approved' }, callId: 'yes' },
      { tool: 'append_line', args: { file, text: 'denied' }, callId: 'no' },
    ];
    const handle = await startTeam(approvalQueue, workflowId, calls);
    const settle = new SettleClient(client, approvalQueue);

    const first = await awaitingApproval(handle, 'yes');
    const key = callKey({ workflowId, callId: 'yes', tool: 'append_line', args: { file, text: 'approved' } });
    expect(first).toMatchObject({ key, level: 'A3' });
    expect(await handle.query(waitingForQuery)).toContain(`settle approve ${workflowId} ${key}`);
    // What an approval lets run, whole, for a team's tool too: the query, and `settle status`.
    expect(await handle.query(pendingApprovalsQuery)).toEqual([
      {
        key,
        turn: first.turn,
        callId: 'yes',
        tool: 'append_line',
        args: { file, text: 'approved' },
        keyMode: 'sha256',
        sinceMs: expect.any(Number),
        deadlineMs: expect.any(Number),
      },
    ]);
    const status = await runSettle(['status', workflowId], { env: { TEMPORAL_ADDRESS: inject('temporalAddress') } });
    expect(status.stdout).toContain(
      `waiting for approval: ${key.slice(0, 16)} turn ${first.turn} call yes append_line ${JSON.stringify({ file, text: 'approved' })}\n`,
    );
    expect(fs.existsSync(file)).toBe(false); // nothing runs before the approval
    expect(await settle.callKeys(workflowId)).toEqual([key]); // what `settle approve` resolves a key prefix against
    await settle.approve(workflowId, await approval(settle, workflowId, key, 'approve', 'change ticket CHG-7'));

    const second = await awaitingApproval(handle, 'no');
    await settle.approve(workflowId, await approval(settle, workflowId, second.key!, 'deny', 'not during the freeze'));

    const [approved, denied] = await handle.result();
    expect(approved).toMatchObject({
      key,
      resolution: 'executed',
      state: 'COMPLETED',
      result: { appended: 'approved' },
      approval: { approver: TEST_OPERATOR, decision: 'approve', reason: 'change ticket CHG-7' },
    });
    expect((await store.events(key))[0]!.detail).toMatchObject({ approval: { approver: TEST_OPERATOR, reason: 'change ticket CHG-7' } });
    expect(denied).toMatchObject({
      resolution: 'denied',
      state: 'NO_RECORD',
      approval: { approver: TEST_OPERATOR, decision: 'deny' },
      observation: { error: `denied by ${TEST_OPERATOR}: not during the freeze` },
    });
    expect(await store.get(second.key!)).toBeUndefined();
    expect(fs.readFileSync(file, 'utf8')).toBe(`${key} approved\n`);
  });

  it('is denied by settle when no one decides within the approval timeout', async () => {
    const file = path.join(tempWorkspace('team-a3'), 'log.txt');
    const [result] = await (
      await startTeam(approvalQueue, uniqueId('team-a3-late'), [{ tool: 'append_line', args: { file, text: 'late' }, callId: 'late' }], {
        approvalTimeoutMs: 1_000,
      })
    ).result();
    expect(result).toMatchObject({ resolution: 'denied', approval: { approver: 'settle', decision: 'deny' } });
    expect(result!.observation.error).toMatch(/no approval within 1000 ms/);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('refuses an approval whose credential is not for that call', async () => {
    const file = path.join(tempWorkspace('team-a3'), 'log.txt');
    const workflowId = uniqueId('team-a3-forged');
    const handle = await startTeam(approvalQueue, workflowId, [{ tool: 'append_line', args: { file, text: 'x' }, callId: 'x' }], {
      approvalTimeoutMs: 30_000,
    });
    const { key } = await awaitingApproval(handle, 'x');
    const settle = new SettleClient(client, approvalQueue);
    // Signed for another workflow: the worker's check of the credential refuses it.
    await expect(
      settle.approve(workflowId, await approval(settle, workflowId, key!, 'approve', 'x', { trajectoryId: 'some-other-workflow' })),
    ).rejects.toThrow();
    expect((await handle.query(callsQuery))[0]).toMatchObject({ resolution: 'awaiting_approval' });
    await handle.terminate('test done');
  });
});

describe('capabilities for team tools', () => {
  function capability(workflowId: string, rights: ('read' | 'write')[], objects: string[], keys: KeyRing = ring) {
    return sign(
      { v: 1, aud: workflowId, rights, objects, pred: { max_cost: 5, budget: 100 }, exp: Date.now() + 3_600_000, parent: null, depth: 0 },
      keys,
    );
  }

  it('a worker holding capability keys refuses calls without a capability, touching nothing', async () => {
    const file = path.join(tempWorkspace('team-cap'), 'log.txt');
    const [result] = await (
      await startTeam(keyedQueue, uniqueId('team-cap-none'), [{ tool: 'append_line', args: { file, text: 'x' }, callId: 'x' }])
    ).result();
    expect(result).toMatchObject({ resolution: 'denied', state: 'NO_RECORD' });
    expect(result!.observation.error).toMatch(
      /denied by the worker's policy: this worker holds capability keys, so every trajectory needs a capability .*settled\(\{ capability \}\)/,
    );
    expect(await store.get(result!.key)).toBeUndefined();
    expect(fs.existsSync(file)).toBe(false);
  });

  it('authorizes each call by the right and object its definition names: within runs, outside or unlisted is denied', async () => {
    const dir = tempWorkspace('team-cap');
    const file = path.join(dir, 'log.txt');
    const outside = path.join(tempWorkspace('team-cap-other'), 'log.txt');
    const workflowId = uniqueId('team-cap');
    const calls: Calls = [
      { tool: 'append_line', args: { file, text: 'inside' }, callId: 'in' },
      { tool: 'count_lines', args: { file }, callId: 'count' },
      { tool: 'append_line', args: { file: outside, text: 'outside' }, callId: 'out' },
      { tool: 'charge_card', args: { amount_cents: 100 }, callId: 'pay' },
    ];
    const [inside, count, out, pay] = await (
      await startTeam(keyedQueue, workflowId, calls, { capability: capability(workflowId, ['read', 'write'], [`path:${dir}`]) })
    ).result();
    expect(inside).toMatchObject({ resolution: 'executed', result: { appended: 'inside' } });
    expect(count).toMatchObject({ resolution: 'read', result: { lines: 1 } });
    expect(out).toMatchObject({ resolution: 'denied', state: 'NO_RECORD' });
    expect(out!.observation.error).toMatch(/denied by capability \(objects\): .* is not within path:/);
    expect(fs.existsSync(outside)).toBe(false);
    // charge_card declares no access: a capability cannot authorize it.
    expect(pay).toMatchObject({ resolution: 'denied' });
    expect(pay!.observation.error).toMatch(/denied by capability \(rights\): charge_card declares no access/);
  });

  it('denies a right the capability does not grant, and a capability issued to another workflow', async () => {
    const dir = tempWorkspace('team-cap');
    const file = path.join(dir, 'log.txt');
    const workflowId = uniqueId('team-cap-read');
    const [write] = await (
      await startTeam(keyedQueue, workflowId, [{ tool: 'append_line', args: { file, text: 'x' }, callId: 'w' }], {
        capability: capability(workflowId, ['read'], [`path:${dir}`]),
      })
    ).result();
    expect(write!.observation.error).toMatch(/denied by capability \(rights\): write is not among read/);
    const other = uniqueId('team-cap-aud');
    const [stolen] = await (
      await startTeam(keyedQueue, other, [{ tool: 'count_lines', args: { file }, callId: 'c' }], {
        capability: capability(workflowId, ['read'], [`path:${dir}`]),
      })
    ).result();
    expect(stolen!.observation.error).toMatch(/denied by capability \(audience\)/);
    expect(fs.existsSync(file)).toBe(false);
  });
});

const quietLogger = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
