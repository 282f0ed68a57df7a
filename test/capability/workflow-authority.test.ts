/**
 * Authority is checked where the effect happens, not where a workflow says it is
 * (docs/security.md#the-trust-boundary). A stranger with a Temporal client and a worker of their
 * own — no settle plugin, no operator key — schedules settle's activities directly on settle's task
 * queues, and answers for a trajectory's id with a made-up description of the call it waits on.
 * Against the real worker, database and CLI:
 *
 * - an A3 call (the operator raised a team tool's level on its worker) does not run without an
 *   operator credential, and no claim event names an approver a credential does not prove;
 * - a plugin worker that runs no trajectories refuses a call naming a trajectory's workspace;
 * - `settle approve` refuses to sign a call whose description does not derive the key it waits
 *   under; a credential captured by describing a harmless call (where the key cannot be
 *   recomputed) approves nothing else — neither through the real trajectory nor scheduled directly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { SettlePlugin } from '../../api/worker';
import { callKey } from '../../api/testing';
import { SettleClient } from '../../client/index';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import { installRuntime } from '../../workers/runtime';
import type { PendingApproval } from '../../core/approval-claim';
import { runSettle } from '../support/cli';
import { openTestDb, startTestWorker, tempWorkspace, testStore, testWorkspaceRoot, uniqueId, type RunningWorker } from '../support/env';
import { until } from '../support/in-doubt';
import { TEST_OPERATOR } from '../support/operator';
import { teamTools } from '../plugin/fixtures/tools';
import { capturedQuery, endSignal, type impostor, type rawExecute, type rawRead } from './fixtures/foreign-workflows';

const FOREIGN = fileURLToPath(new URL('./fixtures/foreign-workflows.ts', import.meta.url));
const quietLogger = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const db = openTestDb(2);
const store = testStore(db);
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
const teamQueue = uniqueId('team-raised');
const foreignQueue = uniqueId('foreign');
let settleWorker: RunningWorker;
let client: Client;
let clientConnection: Connection;
let workerConnection: NativeConnection;
const workers: { worker: Worker; running: Promise<void> }[] = [];

beforeAll(async () => {
  installRuntime('WARN');
  settleWorker = await startTestWorker();
  workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  // The team's worker: its operator raised append_line to A3; no capability keys; runs no trajectories.
  const team = await Worker.create({
    plugins: [
      new SettlePlugin({
        tools: [...teamTools],
        levels: { append_line: 'A3' },
        keyRing: null,
        databaseUrl: inject('databaseUrl'),
        policy: makeWorkerPolicy({ workspaceRoot: testWorkspaceRoot(), modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: false }),
        warn: () => {},
      }),
    ],
    connection: workerConnection,
    taskQueue: teamQueue,
  });
  // The stranger's worker: their own workflows, no activities, no keys.
  const bundle = await bundleWorkflowCode({ workflowsPath: FOREIGN, logger: quietLogger });
  const foreign = await Worker.create({ connection: workerConnection, taskQueue: foreignQueue, workflowBundle: { code: bundle.code } });
  for (const worker of [team, foreign]) workers.push({ worker, running: worker.run() });
  clientConnection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection: clientConnection });
}, 180_000);

afterAll(async () => {
  for (const { worker } of workers) worker.shutdown();
  await Promise.all(workers.map((w) => w.running));
  await settleWorker?.stop();
  await workerConnection?.close();
  await clientConnection?.close();
  await db.destroy();
});

function raw(workflowId: string, taskQueue: string, input: Record<string, unknown>) {
  return client.workflow.execute<typeof rawExecute>('rawExecute', { workflowId, taskQueue: foreignQueue, args: [taskQueue, input] });
}

describe('a workflow that schedules settle’s activities itself', { timeout: 180_000 }, () => {
  it('cannot run a team tool its operator raised to A3 without an operator credential, nor record an approver it names', async () => {
    const file = path.join(tempWorkspace('raised'), 'log.txt');
    const args = { file, text: 'unapproved' };
    for (const approval of [undefined, { approver: 'alice (change manager)', reason: 'trust me' }]) {
      const workflowId = uniqueId('raw-a3');
      const key = callKey({ workflowId, callId: 'c', tool: 'append_line', args });
      const outcome = await raw(workflowId, teamQueue, {
        key,
        turn: 0,
        callId: 'c',
        tool: 'append_line',
        args,
        workspace: '',
        leaseMs: 3_000,
        ...(approval ? { approval } : {}),
      });
      expect(outcome).toMatchObject({ kind: 'denied', component: 'approval' });
      expect((outcome as { reason: string }).reason).toMatch(/^the approval's credential must be given: an A3 call executes only with/);
      expect(await store.get(key)).toBeUndefined(); // nothing claimed, no approver recorded
    }
    expect(fs.existsSync(file)).toBe(false);
  });

  it('cannot make a plugin worker that runs no trajectories act in a trajectory’s workspace', async () => {
    const ws = tempWorkspace('not-yours');
    fs.writeFileSync(path.join(ws, 'secret.txt'), 'the trajectory’s file\n');
    const workflowId = uniqueId('raw-ws');
    const args = { command: 'echo pwned > pwned.txt', timeout_ms: 30_000 };
    const outcome = await raw(workflowId, teamQueue, {
      key: callKey({ workflowId, callId: 'b', tool: 'bash_execute', args }),
      turn: 0,
      callId: 'b',
      tool: 'bash_execute',
      args,
      workspace: ws,
      leaseMs: 3_000,
    });
    expect(outcome).toMatchObject({ kind: 'denied', component: 'policy' });
    expect((outcome as { reason: string }).reason).toMatch(/this worker runs no trajectories, so no call may name a workspace/);
    const read = await client.workflow.execute<typeof rawRead>('rawRead', {
      workflowId: uniqueId('raw-read'),
      taskQueue: foreignQueue,
      args: [teamQueue, { tool: 'file_view', args: { path: path.join(ws, 'secret.txt'), offset: 1, limit: 5 }, workspace: ws }],
    });
    expect(read).toMatchObject({ kind: 'denied', component: 'policy' });
    expect(fs.existsSync(path.join(ws, 'pwned.txt'))).toBe(false);
  });
});

describe('an approval spoofed through the workflow id', { timeout: 300_000 }, () => {
  it('settle approve refuses a description that does not derive its key; a credential captured for a harmless description runs nothing else', async () => {
    const settle = new SettleClient(settleWorker.client, settleWorker.taskQueue);
    const ws = tempWorkspace('spoof');
    const id = uniqueId('spoof');
    const destructive = { call_id: 'rm', tool: 'bash_execute', args: { command: "echo 'routine housekeeping' >> effects.log" } };
    const effects = path.join(ws, 'effects.log');

    // The real trajectory: an A3 shell call waits for approval under key K.
    const startReal = async () => {
      await settle.start(id, { workspace: ws, levelOverrides: { bash_execute: 'A3' } });
      settle.runTurn(id, 0, [destructive]).catch(() => {});
      return until(async () => (await settle.pendingApprovals(id).catch(() => []))[0] ?? null, 'waiting for approval');
    };
    const real = await startReal();
    expect(real).toMatchObject({ tool: 'bash_execute', args: { command: destructive.args.command }, keyMode: 'sha256' });
    const key = real.key;

    // The stranger ends it and answers for its id, claiming the same key waits on a harmless read.
    const impersonate = async (shown: PendingApproval) => {
      await client.workflow.getHandle(id).terminate('taken over');
      return client.workflow.start<typeof impostor>('impostor', { workflowId: id, taskQueue: foreignQueue, args: [shown] });
    };
    const harmless = { ...real, tool: 'file_view', args: { path: path.join(ws, 'README.md') } };
    let fake = await impersonate(harmless);
    const refused = await runSettle(['approve', id, key, '--reason', 'looks harmless'], { env: cliEnv });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/misdescribes the call it waits on; nothing was signed/);
    expect(await fake.query(capturedQuery)).toEqual([]);

    // Described in keyed mode, the key cannot be recomputed: the operator signs what is shown.
    await fake.signal(endSignal);
    fake = await impersonate({ ...harmless, keyMode: 'hmac' });
    const signedHarmless = await runSettle(['approve', id, key, '--reason', 'looks harmless'], { env: cliEnv });
    expect(signedHarmless.stderr).toBe('');
    expect(signedHarmless.stdout).toContain('file_view');
    const [captured] = (await fake.query(capturedQuery)) as { body: { tool: string; operator: string } }[];
    expect(captured?.body).toMatchObject({ tool: 'file_view', operator: TEST_OPERATOR });
    await fake.signal(endSignal);

    // Replayed to the real trajectory, restarted under the same id: the same key, another call.
    await client.workflow
      .getHandle(id)
      .terminate('ended by the stranger')
      .catch(() => {});
    const again = await startReal();
    expect(again.key).toBe(key);
    const update = client.workflow.getHandle(id).executeUpdate('approveCall', {
      args: [{ key, approver: TEST_OPERATOR, decision: 'approve', reason: 'looks harmless', credential: captured }],
    });
    await expect(update).rejects.toMatchObject({ cause: { message: expect.stringMatching(/credential must be for this tool/) } });

    // Scheduled directly under the trajectory's id, with the captured credential as the approval.
    await client.workflow.getHandle(id).terminate('ended by the stranger');
    const outcome = await raw(id, settleWorker.taskQueue, {
      key,
      turn: 0,
      callId: 'rm',
      tool: 'bash_execute',
      args: destructive.args,
      workspace: ws,
      leaseMs: 3_000,
      approval: { approver: TEST_OPERATOR, reason: 'looks harmless', credential: captured },
    });
    expect(outcome).toMatchObject({ kind: 'denied', component: 'approval' });
    expect((outcome as { reason: string }).reason).toMatch(/credential must be for this tool/);
    expect(fs.existsSync(effects)).toBe(false);
    expect(await store.get(key)).toBeUndefined();
  });
});
