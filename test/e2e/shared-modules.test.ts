/**
 * Trajectories on one worker share its preloaded modules (workers/workflow-bundle.ts: zod, the
 * schemas, core/), evaluated once per worker thread. Nothing one trajectory does there may change
 * another: a refused input, malformed calls and a refused update first, then a valid trajectory
 * and the same refusals again, all on one worker (one workflow thread, one reusable context); then
 * every history replays alone, each in a fresh replay worker (fresh modules: a trajectory whose
 * commands depended on what ran before it on the live worker would not replay there), and all
 * together in the reverse order.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Worker } from '@temporalio/worker';
import { SettleClient } from '../../client/index';
import { prepareWorkspace } from '../../cli/demo';
import { runTurnUpdate, type ScriptedTurn, type TrajectoryResult } from '../../workflows/definitions';
import { installRuntime } from '../../workers/runtime';
import { startTestWorker, tempWorkspace, uniqueId, type RunningWorker } from '../support/env';

let worker: RunningWorker;
let settle: SettleClient;

beforeAll(async () => {
  worker = await startTestWorker();
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(async () => {
  await worker?.stop();
});

async function run(workflowId: string, input: Record<string, unknown>): Promise<TrajectoryResult> {
  return worker.client.workflow.execute('trajectoryWorkflow', { taskQueue: worker.taskQueue, workflowId, args: [input] });
}

const REFUSED_INPUT = 'input.leaseMs must be at least 500 (got 100)';

function malformedTurns(app: string): ScriptedTurn[] {
  return [
    { turn: 0, calls: [{ call_id: 'empty', tool: 'file_edit', args: { path: app, old_str: '', new_str: 'x' } }] },
    { turn: 1, calls: [{ call_id: 'extra', tool: 'file_edit', args: { path: app, old_str: 'a', new_str: 'b', dry_run: true } }] },
    { turn: 2, calls: [{ call_id: 'unknown', tool: 'rm_rf', args: {} }] },
    { turn: 3, calls: [{ call_id: 'relative', tool: 'file_view', args: { path: 'app.ts', offset: 0, limit: 501 } }] },
  ];
}

/** The calls of a result without what differs by trajectory id (keys). */
const reports = (r: TrajectoryResult) => r.calls.map((c) => [c.turn, c.callId, c.resolution, c.state, c.observation]);

describe('trajectories sharing a worker thread', () => {
  it('leave nothing behind for each other: refusals, then a valid trajectory, then the refusals again; every history replays alone and in another order', async () => {
    const ids: string[] = [];
    const refuseInput = async () => {
      const id = uniqueId('shared-refused');
      ids.push(id);
      await expect(run(id, { workspace: tempWorkspace('shared'), leaseMs: 100 })).rejects.toMatchObject({
        cause: { type: 'SettleInvalidInput', message: REFUSED_INPUT },
      });
    };
    const malformed = async () => {
      const ws = tempWorkspace('shared');
      prepareWorkspace(ws);
      const id = uniqueId('shared-malformed');
      ids.push(id);
      const result = await run(id, { workspace: ws, turns: malformedTurns(path.join(ws, 'app.ts')) });
      expect(result.calls.map((c) => [c.callId, c.resolution, c.key])).toEqual([
        ['empty', 'invalid', null],
        ['extra', 'invalid', null],
        ['unknown', 'invalid', null],
        ['relative', 'invalid', null],
      ]);
      return result;
    };
    const refusedUpdate = async () => {
      const ws = tempWorkspace('shared');
      fs.writeFileSync(path.join(ws, 'config.txt'), 'replicas=1\n');
      const id = uniqueId('shared-orch');
      ids.push(id);
      await settle.start(id, { workspace: ws });
      // Past the client's own check, straight to the workflow's update validator.
      const calls = [{ call_id: 'steal#compensate', tool: 'file_edit', args: {} }];
      await expect(settle.handle(id).executeUpdate(runTurnUpdate, { args: [{ turn: 0, calls }] })).rejects.toMatchObject({
        cause: { message: expect.stringContaining('calls.0.call_id must not end with #compensate') },
      });
      const turn = await settle.runTurn(id, 0, [
        { call_id: 'e1', tool: 'file_edit', args: { path: path.join(ws, 'config.txt'), old_str: 'replicas=1', new_str: 'replicas=3' } },
      ]);
      expect(turn.calls.map((c) => [c.callId, c.resolution])).toEqual([['e1', 'executed']]);
      await settle.finish(id, 'completed', 'done');
      expect((await settle.result(id)).outcome).toBe('completed');
      expect(fs.readFileSync(path.join(ws, 'config.txt'), 'utf8')).toBe('replicas=3\n');
    };

    await refuseInput();
    const firstMalformed = await malformed();
    await refusedUpdate();

    const ws = tempWorkspace('shared');
    prepareWorkspace(ws);
    const app = path.join(ws, 'app.ts');
    const validId = uniqueId('shared-valid');
    ids.push(validId);
    const valid = await run(validId, {
      workspace: ws,
      levelOverrides: { bash_execute: 'A3' },
      turns: [
        {
          turn: 0,
          calls: [{ call_id: 'rename', tool: 'file_edit', args: { path: app, old_str: 'function greet(', new_str: 'function hi(' } }],
        },
        { turn: 1, calls: [{ call_id: 'view', tool: 'file_view', args: { path: app, offset: 1, limit: 2 } }] },
        { turn: 2, calls: [{ call_id: 'body', tool: 'file_edit', args: { path: app, old_str: "'hello'", new_str: "'hi'" } }] },
      ],
    });
    expect(valid.outcome).toBe('completed');
    expect(valid.calls.map((c) => [c.callId, c.resolution, c.state])).toEqual([
      ['rename', 'executed', 'COMPLETED'],
      ['view', 'read', 'NO_RECORD'],
      ['body', 'executed', 'COMPLETED'],
    ]);
    expect(fs.readFileSync(app, 'utf8')).toBe("export function hi(name: string): string {\n  return 'hi';\n}\n");

    const secondMalformed = await malformed();
    expect(reports(secondMalformed)).toEqual(reports(firstMalformed));
    await refusedUpdate();
    await refuseInput();

    installRuntime('WARN');
    const workflowBundle = { codePath: inject('workflowBundlePath') };
    const histories = await Promise.all(
      ids.map(async (id) => ({ workflowId: id, history: await worker.client.workflow.getHandle(id).fetchHistory() })),
    );
    for (const { workflowId, history } of histories) await Worker.runReplayHistory({ workflowBundle }, history, workflowId);
    const replayed: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle }, [...histories].reverse())) {
      expect(result.error, result.workflowId).toBeUndefined();
      replayed.push(result.workflowId);
    }
    expect(replayed).toEqual([...ids].reverse());
  });
});
