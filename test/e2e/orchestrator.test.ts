/**
 * Orchestrator-driven trajectories through SettleClient: runTurn idempotence, A3 approvals,
 * compensation on cancel and failure, continue-as-new, SRE status. Real Temporal, real Postgres.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { deriveKey } from '../../core/key';
import type { ProposedCall, TrajectoryResult } from '../../workflows/definitions';
import { openTestDb, startTestWorker, tempWorkspace, testStore, uniqueId, type RunningWorker } from '../support/env';
import { approval, signed, TEST_OPERATOR } from '../support/operator';

let worker: RunningWorker;
let settle: SettleClient;
const db = openTestDb(2);
const store = testStore(db);

beforeAll(async () => {
  worker = await startTestWorker();
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(async () => {
  await worker?.stop();
  await db.destroy();
});

function workspace(content = 'replicas=1\n'): { ws: string; file: string } {
  const ws = tempWorkspace('orch');
  const file = path.join(ws, 'config.txt');
  fs.writeFileSync(file, content);
  return { ws, file };
}

const edit = (file: string, from: string, to: string, id = 'e1'): ProposedCall => ({
  call_id: id,
  tool: 'file_edit',
  args: { path: file, old_str: from, new_str: to },
});
const bash = (command: string, id = 'b1'): ProposedCall => ({ call_id: id, tool: 'bash_execute', args: { command } });

async function waitFor<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('orchestrator-driven trajectory', () => {
  it('the same runTurn sent twice (a retrying orchestrator) executes once', async () => {
    const { ws } = workspace();
    const id = uniqueId('orch');
    await settle.start(id, { workspace: ws });
    const calls = [bash('echo once >> ran.log; cat ran.log | wc -l')];
    const first = await settle.runTurn(id, 0, calls);
    const second = await settle.runTurn(id, 0, calls); // same update id: deduplicated by Temporal
    // Even under another update id (e.g. after an orchestrator lost its state), the key replays.
    const third = await settle.handle(id).executeUpdate('runTurn', { args: [{ turn: 0, calls }], updateId: 'another-id' });
    expect(first.calls[0]).toMatchObject({ resolution: 'executed', observation: { output: '1\n' } });
    expect(second).toEqual(first);
    expect((third as typeof first).calls[0]).toMatchObject({
      resolution: 'replayed',
      key: first.calls[0]!.key,
      observation: { output: '1\n' },
    });
    expect(fs.readFileSync(path.join(ws, 'ran.log'), 'utf8')).toBe('once\n');

    // A malformed turn is refused by the client, and by the update validator for a caller that
    // bypasses it, naming the field.
    await expect(settle.runTurn(id, -1, calls)).rejects.toThrow('turn must be at least 0 (got -1)');
    await expect(settle.handle(id).executeUpdate('runTurn', { args: [{ turn: -1, calls }] })).rejects.toMatchObject({
      cause: { message: 'turn must be at least 0 (got -1)' },
    });

    await settle.finish(id, 'completed', 'done');
    const result = await settle.result(id);
    expect(result).toMatchObject({ outcome: 'completed', reason: 'done' });
    expect(result.calls.map((c) => c.resolution)).toEqual(['executed', 'replayed']);
  });

  it('A3 calls wait for approval: approved runs, denied does not, unanswered is denied at the timeout', async () => {
    const { ws } = workspace();
    const id = uniqueId('a3');
    await settle.start(id, { workspace: ws, levelOverrides: { bash_execute: 'A3' }, approvalTimeoutMs: 1500 });

    const approved = settle.runTurn(id, 0, [bash('echo approved > a.txt', 'ok')]);
    const pending = await waitFor(async () => {
      const s = await settle.status(id);
      return s.pendingApprovals === 1 && s.status === 'waiting_approval' ? s : null;
    });
    const key = pending.calls[0]!.key!;
    expect(pending.calls[0]).toMatchObject({ level: 'A3', resolution: 'awaiting_approval' });
    expect(pending.waitingFor).toContain(`settle approve ${id} ${key}`);
    await settle.approve(id, await approval(settle, id, key, 'approve', 'change ticket CHG-42'));
    expect((await approved).calls[0]).toMatchObject({ resolution: 'executed', approval: { approver: TEST_OPERATOR, decision: 'approve' } });
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('approved\n');
    const claim = (await store.events(key))[0]!;
    expect(claim.detail).toMatchObject({ approval: { approver: TEST_OPERATOR, reason: 'change ticket CHG-42' } });

    const denied = settle.runTurn(id, 1, [bash('echo denied > d.txt', 'no')]);
    const deniedKey = await waitFor(
      async () => (await settle.status(id)).calls.find((c) => c.callId === 'no' && c.resolution === 'awaiting_approval')?.key,
    );
    await settle.approve(id, await approval(settle, id, deniedKey, 'deny', 'not during the freeze'));
    expect((await denied).calls[0]).toMatchObject({
      resolution: 'denied',
      observation: { error: `denied by ${TEST_OPERATOR}: not during the freeze` },
    });

    const timedOut = await settle.runTurn(id, 2, [bash('echo late > t.txt', 'late')]);
    expect(timedOut.calls[0]).toMatchObject({ resolution: 'denied', approval: { approver: 'settle', decision: 'deny' } });
    expect(timedOut.calls[0]!.observation!.error).toMatch(/no approval within 1500 ms/);
    // Approving it now is refused before anything is signed, saying the deadline decided.
    await expect(settle.waitingApproval(id, timedOut.calls[0]!.key!)).rejects.toThrow(/was denied when its approval deadline passed/);
    await expect(settle.waitingApproval(id, deniedKey)).rejects.toThrow(`was already denied by ${TEST_OPERATOR}`);
    expect(fs.existsSync(path.join(ws, 'd.txt'))).toBe(false);
    expect(fs.existsSync(path.join(ws, 't.txt'))).toBe(false);
    expect(await store.get(deniedKey)).toBeUndefined(); // a denied call never touches a record

    // Approving a call that is not waiting: nothing to sign for, and a credential made anyway is refused by the validator.
    await expect(approval(settle, id, key, 'approve', 'again')).rejects.toThrow(
      /key must name a call still waiting for approval: .* was already approved by/,
    );
    const made = signed({
      purpose: 'approve',
      namespace: 'default',
      trajectoryId: id,
      key,
      decision: 'approve',
      reason: 'again',
      tool: 'bash_execute',
      call: 'c'.repeat(64),
    });
    await expect(settle.approve(id, made)).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/name a call still waiting for approval|key must name a call .* waiting for approval/) },
    });
    await settle.finish(id, 'completed', 'done');
    await settle.result(id);
  });

  it('compensates completed A2 calls in reverse order when cancelled', async () => {
    const { ws, file } = workspace('a=1\nb=1\n');
    const id = uniqueId('comp');
    await settle.start(id, { workspace: ws });
    await settle.runTurn(id, 0, [edit(file, 'a=1', 'a=2', 'first')]);
    await settle.runTurn(id, 1, [edit(file, 'b=1', 'b=2', 'second'), bash('true', 'shell')]);
    expect(fs.readFileSync(file, 'utf8')).toBe('a=2\nb=2\n');

    await settle.handle(id).cancel();
    await expect(settle.result(id)).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(fs.readFileSync(file, 'utf8')).toBe('a=1\nb=1\n');
    const records = await store.list({ trajectoryId: id });
    expect(records.filter((r) => r.callId.endsWith('#compensate')).map((r) => [r.callId, r.state])).toEqual([
      ['first#compensate', 'COMPLETED'],
      ['second#compensate', 'COMPLETED'],
    ]);
    // Newest first: "second" was compensated before "first".
    const compensations = records
      .filter((r) => r.callId.endsWith('#compensate'))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    expect(compensations.map((r) => r.callId)).toEqual(['second#compensate', 'first#compensate']);
  });

  it('compensates on a failed finish and reports what could not be compensated', async () => {
    const { ws, file } = workspace();
    const id = uniqueId('fail');
    await settle.start(id, { workspace: ws });
    await settle.runTurn(id, 0, [edit(file, 'replicas=1', 'replicas=3'), bash('echo side-effect > s.txt')]);
    await settle.finish(id, 'failed', 'rollout aborted');
    const error = await settle.result(id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const details = ((error as WorkflowFailedError).cause as { details?: unknown[] }).details?.[0] as TrajectoryResult;
    expect(details.outcome).toBe('failed');
    expect(details.compensations!.map((c) => [c.tool, c.resolution])).toEqual([
      ['bash_execute', 'not_compensable'],
      ['file_edit', 'executed'],
    ]);
    expect(fs.readFileSync(file, 'utf8')).toBe('replicas=1\n');
  });

  it('continues as new when the history grows, keeping every call’s key and state', async () => {
    const { ws } = workspace();
    const id = uniqueId('can');
    const turns = Array.from({ length: 8 }, (_, i) => ({ turn: i, calls: [bash(`echo ${i} >> log.txt`, `c${i}`)] }));
    const handle = await settle.start(id, { workspace: ws, turns, maxHistoryEvents: 30 });
    const result = await settle.result(id);
    expect(result.calls.map((c) => [c.turn, c.resolution])).toEqual(turns.map((t) => [t.turn, 'executed']));
    expect(new Set(result.calls.map((c) => c.key)).size).toBe(8);
    expect(fs.readFileSync(path.join(ws, 'log.txt'), 'utf8')).toBe(turns.map((t) => `${t.turn}\n`).join(''));
    // The first run ended by continuing as new; nothing was executed twice.
    const firstRun = settle.client.workflow.getHandle(id, handle.firstExecutionRunId);
    expect((await firstRun.describe()).status.name).toBe('CONTINUED_AS_NEW');
    const records = await store.list({ trajectoryId: id });
    expect(records.map((r) => [r.state, r.generation])).toEqual(Array(8).fill(['COMPLETED', 1]));
  });

  it('compensates calls from before a continue-as-new (their arguments come from the endpoint records)', async () => {
    const { ws, file } = workspace('v0\n');
    const id = uniqueId('can-comp');
    await settle.start(id, { workspace: ws, maxHistoryEvents: 30 });
    for (let turn = 0; turn < 6; turn++) await settle.runTurn(id, turn, [edit(file, `v${turn}`, `v${turn + 1}`, `e${turn}`)]);
    expect(fs.readFileSync(file, 'utf8')).toBe('v6\n');
    const runs = settle.client.workflow.list({ query: `WorkflowId = "${id}"` });
    let closedRuns = 0;
    for await (const run of runs) if (run.status.name === 'CONTINUED_AS_NEW') closedRuns++;
    expect(closedRuns).toBeGreaterThan(0);
    await settle.finish(id, 'failed', 'roll everything back');
    const failure = await settle.result(id).catch((err: WorkflowFailedError) => err);
    const details = ((failure as WorkflowFailedError).cause as { details?: TrajectoryResult[] }).details![0]!;
    expect(details.compensations!.map((c) => c.resolution)).toEqual(Array(6).fill('executed'));
    expect(fs.readFileSync(file, 'utf8')).toBe('v0\n');
  });

  it('refuses an override that would lower a tool’s level: the client before starting, the workflow if started anyway', async () => {
    const { ws } = workspace();
    const id = uniqueId('lower');
    const lowering = { workspace: ws, levelOverrides: { file_edit: 'A0' as const } };
    await expect(settle.start(id, lowering)).rejects.toThrow('input.levelOverrides.file_edit must not lower the level (A2 → A0)');
    await expect(settle.handle(id).describe()).rejects.toThrow(/not found/);
    // A caller that bypasses the client meets the same contract inside the workflow.
    await settle.client.workflow.start('trajectoryWorkflow', { taskQueue: settle.taskQueue, workflowId: id, args: [lowering] });
    await expect(settle.result(id)).rejects.toMatchObject({
      cause: { type: 'SettleInvalidInput', message: 'input.levelOverrides.file_edit must not lower the level (A2 → A0)' },
    });
  });

  it('keyed mode: keys are HMAC with the worker’s secret, which never enters history', async () => {
    const { ws } = workspace();
    const id = uniqueId('keyed');
    const secret = `secret-${uniqueId('k')}`;
    process.env.SETTLE_KEY_SECRET = secret;
    try {
      await settle.start(id, { workspace: ws, keyMode: 'hmac', turns: [{ turn: 0, calls: [bash('echo keyed > k.txt')] }] });
      const result = await settle.result(id);
      const args = { command: 'echo keyed > k.txt', timeout_ms: 30_000 };
      const identity = { trajectoryId: id, turn: 0, callId: 'b1', tool: 'bash_execute', args };
      expect(result.calls[0]).toMatchObject({ resolution: 'executed', key: deriveKey(identity, new TextEncoder().encode(secret)) });
      expect(result.calls[0]!.key).not.toBe(deriveKey(identity));
      expect((await store.get(result.calls[0]!.key!))?.state).toBe('COMPLETED');
      expect(JSON.stringify(await settle.handle(id).fetchHistory())).not.toContain(secret);

      delete process.env.SETTLE_KEY_SECRET;
      const id2 = uniqueId('keyed');
      await settle.start(id2, { workspace: ws, keyMode: 'hmac', turns: [{ turn: 0, calls: [bash('true')] }] });
      await expect(settle.result(id2)).rejects.toBeInstanceOf(WorkflowFailedError);
    } finally {
      delete process.env.SETTLE_KEY_SECRET;
    }
  });
});
