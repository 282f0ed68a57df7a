/**
 * The demo trajectory through a real worker, real Temporal and real Postgres: file contents,
 * endpoint rows and events, replay of a repeated logical call, refusal outside the workspace.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { deriveKey } from '../../core/key';
import { demoProblems, demoTurns, prepareWorkspace } from '../../cli/demo';
import { fileEditHooks } from '../../activities/tools/file-edit';
import type { ScriptedTurn, TrajectoryResult } from '../../workflows/trajectory';
import { SettleClient } from '../../client/index';
import { historyOf as historyIn, localActivityTypes } from '../support/history';
import { openTestDb, startTestWorker, tempWorkspace, testStore, uniqueId, type RunningWorker } from '../support/env';

let worker: RunningWorker;
const historyOf = (id: string) => historyIn(worker.client, id);
const db = openTestDb();
const store = testStore(db);

beforeAll(async () => {
  worker = await startTestWorker();
});
afterAll(async () => {
  await worker?.stop();
  await db.destroy();
});

async function runTrajectory(workflowId: string, workspace: string, turns: ScriptedTurn[]): Promise<TrajectoryResult> {
  return worker.client.workflow.execute('trajectoryWorkflow', {
    taskQueue: worker.taskQueue,
    workflowId,
    args: [{ workspace, turns }],
  });
}

describe('demo trajectory end to end', () => {
  it('edits the file once per logical call, replays the repeat, and leaves one record per key', async () => {
    // A file outside the workspace, in a temporary directory of its own.
    const workspace = tempWorkspace();
    prepareWorkspace(workspace);
    const outsideFile = path.join(tempWorkspace('outside'), 'outside.txt');
    fs.writeFileSync(outsideFile, 'a stays a\n');
    const id = uniqueId('traj');

    const result = await runTrajectory(id, workspace, demoTurns(workspace, outsideFile));

    expect(fs.readFileSync(path.join(workspace, 'app.ts'), 'utf8')).toBe(
      'export function greetUser(name: string): string {\n  return `hello, ${name}`;\n}\n',
    );
    expect(fs.readFileSync(outsideFile, 'utf8')).toBe('a stays a\n');

    expect(result.calls.map((c) => [c.turn, c.callId, c.state, c.resolution])).toEqual([
      [0, 'call_rename', 'COMPLETED', 'executed'],
      [1, 'call_body', 'COMPLETED', 'executed'],
      [0, 'call_rename', 'COMPLETED', 'replayed'],
      [2, 'call_missing', 'COMPLETED', 'executed'],
      [2, 'call_escape', 'COMPLETED', 'executed'],
    ]);
    // The repeat carries the same key and the stored observation.
    expect(result.calls[2]!.key).toBe(result.calls[0]!.key);
    expect(result.calls[2]!.observation).toEqual(result.calls[0]!.observation);
    // Tool-level errors are completed calls whose result is the error.
    expect(result.calls[3]!.observation!.error).toMatch(/old_str matched 0 blocks/);
    expect(result.calls[4]!.observation!.error).toMatch(/args\.path must lie inside the workspace/);

    // The workflow derived the same key the pure function does.
    const first = demoTurns(workspace)[0]!.calls[0]!;
    expect(result.calls[0]!.key).toBe(
      deriveKey({ trajectoryId: id, turn: 0, callId: first.call_id, tool: first.tool, args: { ...first.args, allow_multiple: false } }),
    );

    const records = await store.list({ trajectoryId: id });
    expect(records).toHaveLength(4);
    // The demo's own success check (its exit code) agrees, and catches a broken outcome.
    const finalFile = fs.readFileSync(path.join(workspace, 'app.ts'), 'utf8');
    expect(demoProblems(result, records.length, finalFile)).toEqual([]);
    expect(demoProblems(result, 5, `${finalFile}export const again = greetUser;\n`)).toEqual([
      '5 endpoint records; expected 4',
      'the rename was applied more than once',
    ]);
    expect(records.every((r) => r.state === 'COMPLETED' && r.generation === 1)).toBe(true);
    const renameEvents = await store.events(result.calls[0]!.key!);
    expect(renameEvents.map((e) => [e.fromState, e.toState])).toEqual([
      ['UNSEEN', 'IN_FLIGHT'],
      ['IN_FLIGHT', 'IN_FLIGHT'], // intent recorded
      ['IN_FLIGHT', 'COMPLETED'],
    ]);
    expect((renameEvents[1]!.detail as { intent: { sha256_before: string } }).intent.sha256_before).toMatch(/^[0-9a-f]{64}$/);
  });

  it('runs the same logical calls twice (a restarted trajectory) and executes them once', async () => {
    const workspace = tempWorkspace();
    prepareWorkspace(workspace);
    const id = uniqueId('traj');
    const turns = demoTurns(workspace).slice(0, 2);

    const first = await runTrajectory(id, workspace, turns);
    const afterFirst = fs.readFileSync(path.join(workspace, 'app.ts'), 'utf8');
    // Same workflow id again after the first run closed: every key is the same.
    const second = await runTrajectory(id, workspace, turns);

    expect(first.calls.map((c) => c.resolution)).toEqual(['executed', 'executed']);
    expect(second.calls.map((c) => c.resolution)).toEqual(['replayed', 'replayed']);
    expect(second.calls.map((c) => c.key)).toEqual(first.calls.map((c) => c.key));
    expect(fs.readFileSync(path.join(workspace, 'app.ts'), 'utf8')).toBe(afterFirst);
    for (const c of first.calls) {
      const events = await store.events(c.key!);
      expect(events.filter((e) => e.toState === 'COMPLETED')).toHaveLength(1);
    }
  });

  it('answers a malformed call with an observation naming the field and rule, without a record', async () => {
    const workspace = tempWorkspace();
    prepareWorkspace(workspace);
    const id = uniqueId('traj');
    const result = await runTrajectory(id, workspace, [
      { turn: 0, calls: [{ call_id: 'c1', tool: 'file_edit', args: { path: path.join(workspace, 'app.ts'), old_str: '', new_str: 'x' } }] },
      {
        turn: 0,
        calls: [
          { call_id: 'c2', tool: 'file_edit', args: { path: path.join(workspace, 'app.ts'), old_str: 'a', new_str: 'b', dry_run: true } },
        ],
      },
    ]);
    expect(result.calls.map((c) => [c.resolution, c.key])).toEqual([
      ['invalid', null],
      ['invalid', null],
    ]);
    expect(result.calls[0]!.observation!.error).toMatch(/args\.old_str must/);
    expect(result.calls[1]!.observation!.error).toMatch(/dry_run/);
    expect(await store.list({ trajectoryId: id })).toHaveLength(0);
  });

  it('retries a call that certainly did not execute with backoff, and gives up after 5 attempts', async () => {
    const workspace = tempWorkspace();
    prepareWorkspace(workspace);
    const id = uniqueId('traj');
    let attempts = 0;
    fileEditHooks.beforeRename = async () => {
      attempts++;
      throw new Error('ENOSPC: no space left on device');
    };
    try {
      const result: TrajectoryResult = await worker.client.workflow.execute('trajectoryWorkflow', {
        taskQueue: worker.taskQueue,
        workflowId: id,
        args: [
          {
            workspace,
            backoff: { initialMs: 20 },
            turns: [
              {
                turn: 0,
                calls: [
                  { call_id: 'c', tool: 'file_edit', args: { path: path.join(workspace, 'app.ts'), old_str: 'greet', new_str: 'hi' } },
                ],
              },
            ],
          },
        ],
      });
      expect(attempts).toBe(5);
      expect(result.calls[0]).toMatchObject({ resolution: 'gave_up', state: 'NOT_EXECUTED', attempts: 5 });
      expect(result.calls[0]!.observation!.error).toMatch(/not executed after 5 attempts; last: .*ENOSPC/);
      const record = await store.get(result.calls[0]!.key!);
      expect(record).toMatchObject({ state: 'NOT_EXECUTED', generation: 5 });
    } finally {
      delete fileEditHooks.beforeRename;
    }
  });

  it('runs every catalog tool at its level: A0 without a record, A2 through one', async () => {
    const workspace = tempWorkspace();
    prepareWorkspace(workspace);
    const id = uniqueId('traj');
    const app = path.join(workspace, 'app.ts');
    const result: TrajectoryResult = await worker.client.workflow.execute('trajectoryWorkflow', {
      taskQueue: worker.taskQueue,
      workflowId: id,
      args: [
        {
          workspace,
          turns: [
            { turn: 0, calls: [{ call_id: 'v', tool: 'file_view', args: { path: app, offset: 1, limit: 2 } }] },
            { turn: 1, calls: [{ call_id: 'g', tool: 'grep_search', args: { pattern: 'greet', path: workspace } }] },
            { turn: 2, calls: [{ call_id: 'b', tool: 'bash_execute', args: { command: 'wc -l < app.ts && echo ran >> ran.log' } }] },
            { turn: 2, calls: [{ call_id: 'b', tool: 'bash_execute', args: { command: 'wc -l < app.ts && echo ran >> ran.log' } }] },
          ],
        },
      ],
    });
    expect(result.calls.map((c) => [c.tool, c.level, c.state, c.resolution])).toEqual([
      ['file_view', 'A0', 'NO_RECORD', 'read'],
      ['grep_search', 'A0', 'NO_RECORD', 'read'],
      ['bash_execute', 'A2', 'COMPLETED', 'executed'],
      ['bash_execute', 'A2', 'COMPLETED', 'replayed'],
    ]);
    expect(result.calls[0]!.observation!.output).toMatch(/^1\texport function greet/);
    expect(JSON.parse(result.calls[1]!.observation!.output).matches[0]).toMatchObject({ path: app, line: 1 });
    expect(result.calls[2]!.observation).toMatchObject({ output: '3\n', error: null, exit_status: 0, truncated: false });
    expect(fs.readFileSync(path.join(workspace, 'ran.log'), 'utf8')).toBe('ran\n'); // the repeat did not run again
    const records = await store.list({ trajectoryId: id });
    expect(records.map((r) => r.tool)).toEqual(['bash_execute']);
    expect(records[0]!.intent).toMatchObject({ command: 'wc -l < app.ts && echo ran >> ran.log', sandbox: 'bubblewrap', network: false });
  });

  it('counts every proposal exactly once with no bookkeeping activity per call: the activity that runs a call counts it', async () => {
    const workspace = tempWorkspace();
    prepareWorkspace(workspace);
    const id = uniqueId('traj');
    const app = path.join(workspace, 'app.ts');
    const edit = { call_id: 'e', tool: 'file_edit', args: { path: app, old_str: 'greet(', new_str: 'hello(' } };
    const result = await runTrajectory(id, workspace, [
      { turn: 0, calls: [edit] },
      { turn: 1, calls: [{ call_id: 'v', tool: 'file_view', args: { path: app, offset: 1, limit: 2 } }] },
      { turn: 2, calls: [{ call_id: 'm', tool: 'file_view', args: { path: app, offset: 1, limit: 501 } }] },
      { turn: 0, calls: [edit] }, // the same proposal re-sent: replayed, still one proposal
    ]);
    expect(result.calls.map((c) => c.resolution)).toEqual(['executed', 'read', 'invalid', 'replayed']);
    const rows = await sql<{ turn: number; call_id: string; valid: boolean; field: string | null }>`
      select turn, call_id, valid, field from settle_tool_calls where trajectory_id = ${id} order by turn, call_id`.execute(db);
    expect(rows.rows).toEqual([
      { turn: 0, call_id: 'e', valid: true, field: null },
      { turn: 1, call_id: 'v', valid: true, field: null },
      { turn: 2, call_id: 'm', valid: false, field: 'args.limit' },
    ]);
    // History: one patch marker (the combined patch, at start), none per call; no bookkeeping
    // activity per call: local activities for the lane table and the workspace's host (once per run each), the calls themselves
    // (file tools run in the local lane: the edit, the read and the replay) and the malformed call's
    // count (it runs no activity that could count it), nothing else; search attributes upserted
    // only when they change. Started without search attributes (not by settle's client), so the
    // run publishes `running` itself.
    const history = await historyOf(id);
    expect(history.markers.filter((m) => m !== 'core_patch')).toEqual(Array(5).fill('core_local_activity'));
    expect(await localActivityTypes(worker.client, id)).toEqual([
      'laneTable',
      'locateWorkspace',
      'executeToolCall',
      'recordProposedCall',
      'executeToolCall',
    ]);
    expect(history.patches).toEqual(['settle-2026-12-host-queues']);
    expect(history.upserts).toEqual([
      ['TemporalChangeVersion'], // the combined patch (at start)
      ['SettleInDoubtCount', 'SettlePendingApprovals', 'SettleTrajectoryStatus'], // running
      ['SettleInDoubtCount', 'SettlePendingApprovals', 'SettleProblemCount', 'SettleTrajectoryStatus'], // completed
    ]);
  });

  it("started by settle's client: searchable as running from its start, one patch marker, no upsert that repeats the start", async () => {
    // The benchmark's trajectory (bench/e2e.ts): 10 settled file edits, started as settle's client starts one.
    const workspace = tempWorkspace();
    const file = path.join(workspace, 'notes.txt');
    fs.writeFileSync(file, Array.from({ length: 10 }, (_, i) => `line ${i}: todo`).join('\n') + '\n');
    const turns = Array.from({ length: 10 }, (_, i) => ({
      turn: i,
      calls: [{ call_id: `c${i}`, tool: 'file_edit', args: { path: file, old_str: `line ${i}: todo`, new_str: `line ${i}: done` } }],
    }));
    const settle = new SettleClient(worker.client, worker.taskQueue);
    const id = uniqueId('traj');
    await settle.start(id, { workspace, turns });
    const result = await settle.result(id);
    expect(result.calls.map((c) => c.resolution)).toEqual(Array(10).fill('executed'));
    const history = await historyOf(id);
    expect(history.startAttributes).toEqual(['SettleInDoubtCount', 'SettlePendingApprovals', 'SettleTrajectoryStatus']);
    expect(history.patches).toEqual(['settle-2026-12-host-queues']);
    // The patch, the lane table, the workspace's host, and one local activity per call (file_edit runs in the local lane).
    expect(history.byType.MARKER_RECORDED).toBe(13);
    expect(history.byType.ACTIVITY_TASK_SCHEDULED).toBeUndefined();
    expect(history.upserts).toEqual([
      ['TemporalChangeVersion'], // the combined patch
      ['SettleInDoubtCount', 'SettlePendingApprovals', 'SettleProblemCount', 'SettleTrajectoryStatus'], // completed
    ]);
    expect(history.byType.UPSERT_WORKFLOW_SEARCH_ATTRIBUTES).toBe(2);
    expect((await settle.status(id)).status).toBe('completed');

    // An orchestrator-driven one waits: SREs find it as running with nothing upserted to say so.
    const waiting = uniqueId('traj');
    await settle.start(waiting, { workspace });
    let found: string[] = [];
    for (let i = 0; i < 100 && found.length === 0; i++) {
      found = [];
      for await (const w of worker.client.workflow.list({
        query: `WorkflowId = "${waiting}" AND SettleTrajectoryStatus = "running" AND SettleInDoubtCount = 0 AND SettlePendingApprovals = 0`,
      })) {
        found.push(w.workflowId);
      }
      if (found.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(found).toEqual([waiting]);
    await expect.poll(async () => (await settle.status(waiting)).waitingFor, { timeout: 10_000 }).toMatch(/waiting for the orchestrator/);
    expect((await settle.status(waiting)).status).toBe('running');
    expect((await historyOf(waiting)).upserts).toEqual([['TemporalChangeVersion']]);
    await settle.finish(waiting, 'completed', 'nothing to do');
    await settle.result(waiting);
    expect((await settle.status(waiting)).status).toBe('completed');
  });
});
