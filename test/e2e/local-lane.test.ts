/**
 * The local lane (docs/design.md#lanes): short tools' calls run as local activities inside the
 * workflow task, through the same endpoint record. Checked against a real Temporal server and
 * Postgres, with real worker processes where a worker must die or a call must outlive its bound.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { PATCH_HOST_QUEUES, PATCH_LOCAL_TRACE } from '../../workflows/patches';
import type { ScriptedTurn, TrajectoryResult } from '../../workflows/trajectory';
import { historyOf } from '../support/history';
import { openTestDb, startTestWorker, tempWorkspace, testStore, testWorkspaceRoot, uniqueId, type RunningWorker } from '../support/env';
import { killWorkerProcesses, startWorkerProcess } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);
let worker: RunningWorker;
let overridden: RunningWorker;

beforeAll(async () => {
  [worker, overridden] = await Promise.all([startTestWorker(), startTestWorker({ policy: { lanes: { file_edit: 'activity' } } })]);
});
afterAll(async () => {
  killWorkerProcesses();
  await Promise.all([worker?.stop(), overridden?.stop()]);
  await db.destroy();
});

function workspaceWith(content: string): { workspace: string; file: string } {
  const workspace = tempWorkspace('lane');
  const file = path.join(workspace, 'config.txt');
  fs.writeFileSync(file, content);
  return { workspace, file };
}

const edit = (file: string, callId = 'scale') => ({
  call_id: callId,
  tool: 'file_edit',
  args: { path: file, old_str: 'replicas=1', new_str: 'replicas=2' },
});

async function run(on: RunningWorker, turns: ScriptedTurn[], workspace: string): Promise<{ id: string; result: TrajectoryResult }> {
  const id = uniqueId('lane');
  const handle = await new SettleClient(on.client, on.taskQueue).start(id, { workspace, turns });
  return { id, result: await handle.result() };
}

describe('the local lane', () => {
  it('runs file_edit as a local activity, the reads as activities: the same records and reports', async () => {
    const { workspace, file } = workspaceWith('replicas=1\n');
    const { id, result } = await run(
      worker,
      [{ turn: 0, calls: [{ call_id: 'look', tool: 'file_view', args: { path: file, offset: 1, limit: 10 } }, edit(file)] }],
      workspace,
    );
    expect(result.calls.map((c) => [c.tool, c.resolution, c.state])).toEqual([
      ['file_view', 'read', 'NO_RECORD'],
      ['file_edit', 'executed', 'COMPLETED'],
    ]);
    expect(fs.readFileSync(file, 'utf8')).toBe('replicas=2\n');
    expect(await store.get(result.calls[1]!.key!)).toMatchObject({ state: 'COMPLETED', generation: 1 });

    const history = await historyOf(worker.client, id);
    // PATCH_HOST_QUEUES implies the local lane (patches.ts): one marker.
    expect(history.patches).toEqual([PATCH_HOST_QUEUES]);
    // The read is an activity (reads stay in the activity lane: built-in.ts says why).
    expect(history.byType.ACTIVITY_TASK_SCHEDULED).toBe(1);
    // The lane table and the workspace's host (once per run each), and the edit.
    expect(history.markers.filter((m) => m === 'core_local_activity')).toHaveLength(3);
  });

  it('replays a repeated call from its record, in the local lane as in the activity lane', async () => {
    const { workspace, file } = workspaceWith('replicas=1\n');
    const { result } = await run(
      worker,
      [
        { turn: 0, calls: [edit(file)] },
        // The same logical call (turn 0, same id and arguments), sent again by a retrying orchestrator.
        { turn: 0, calls: [edit(file)] },
      ],
      workspace,
    );
    expect(result.calls.map((c) => c.resolution)).toEqual(['executed', 'replayed']);
    expect(fs.readFileSync(file, 'utf8')).toBe('replicas=2\n');
  });

  it("runs a tool in the activity lane when the worker's operator says so (SETTLE_LANES); a spec cannot choose", async () => {
    const { workspace, file } = workspaceWith('replicas=1\n');
    const { id, result } = await run(overridden, [{ turn: 0, calls: [edit(file)] }], workspace);
    expect(result.calls[0]).toMatchObject({ resolution: 'executed', state: 'COMPLETED' });
    expect((await historyOf(overridden.client, id)).byType.ACTIVITY_TASK_SCHEDULED).toBe(1);
    await expect(
      new SettleClient(worker.client, worker.taskQueue).start(uniqueId('lane'), {
        workspace,
        turns: [],
        lanes: { file_edit: 'local' },
      } as never),
    ).rejects.toThrow(/lanes/);
  });
});

// Worker processes: the call must outlive its bound, or its worker must die in the middle of it.
describe('the local lane with worker processes', { timeout: 150_000 }, () => {
  const queueWorker = (taskQueue: string, failpoints: string) =>
    startWorkerProcess(WORKER, {
      TEMPORAL_TASK_QUEUE: taskQueue,
      SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
      SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      SETTLE_FAILPOINTS: failpoints,
    });

  async function runOn(taskQueue: string, workspace: string, file: string) {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    try {
      const id = uniqueId('lane');
      const handle = await new SettleClient(client, taskQueue).start(id, {
        workspace,
        leaseMs: 2_000,
        turns: [{ turn: 0, calls: [edit(file)] }],
      });
      const result = await handle.result();
      const scheduled = ((await client.workflow.getHandle(id).fetchHistory()).events ?? []).flatMap((e) =>
        e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name ?? ''] : [],
      );
      return { result, history: await historyOf(client, id), scheduled, events: await store.events(result.calls[0]!.key!) };
    } finally {
      await connection.close();
    }
  }

  it('a call that outlives its local bound goes on in the activity lane, and its effect happens once', async () => {
    const { workspace, file } = workspaceWith('replicas=1\n');
    const taskQueue = uniqueId('lane-slow');
    // The edit takes 3 s after its effect, past file_edit's 1 s bound.
    const slow = queueWorker(taskQueue, 'file_edit.after_rename=sleep:3000');
    try {
      const { result, scheduled, events } = await runOn(taskQueue, workspace, file);
      expect(fs.readFileSync(file, 'utf8')).toBe('replicas=2\n');
      expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'replayed' });
      // The activity lane took over: its first claim may still find the local attempt's lease
      // live (busy), and a later attempt replays what that attempt completed.
      expect(scheduled.length).toBeGreaterThanOrEqual(1);
      expect(new Set(scheduled)).toEqual(new Set(['executeToolCall']));
      // One execution, completed by the local attempt that outlived its bound; the activity replayed it.
      expect(events.map((e) => [e.generation, e.fromState, e.toState])).toEqual([
        [1, 'UNSEEN', 'IN_FLIGHT'],
        [1, 'IN_FLIGHT', 'IN_FLIGHT'],
        [1, 'IN_FLIGHT', 'COMPLETED'],
      ]);
    } finally {
      slow.child.kill('SIGKILL');
    }
  });

  it('a worker killed in the middle of a local call: its workflow task times out, another worker probes, nothing runs twice', async () => {
    const { workspace, file } = workspaceWith('replicas=1\n');
    const taskQueue = uniqueId('lane-kill');
    const doomed = queueWorker(taskQueue, 'file_edit.after_rename=kill');
    // Only the doomed worker polls until it has died: it takes the call.
    const outcome = runOn(taskQueue, workspace, file);
    expect(await doomed.exited).toBe('SIGKILL');
    const survivor = queueWorker(taskQueue, '');
    try {
      const { result, history, scheduled, events } = await outcome;
      expect(fs.readFileSync(file, 'utf8')).toBe('replicas=2\n');
      expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'settled_by_probe' });
      expect(history.byType.WORKFLOW_TASK_TIMED_OUT).toBeGreaterThanOrEqual(1);
      // The execution ran in the local lane; its re-run met the dead holder's trace (the lease
      // still live, or lapsed: IN_DOUBT), so the rest of the call went on in the activity lane:
      // the replay of the probe's result, and a wait for a live lease if there was one. Probes are
      // activities. (locateWorkspace: the doomed worker may have answered it locally, or a worker of the queue did.)
      const rest = scheduled.filter((name) => name !== 'probeToolCall' && name !== 'locateWorkspace');
      expect(rest.length).toBeGreaterThanOrEqual(1);
      expect(new Set(rest)).toEqual(new Set(['executeToolCall']));
      expect(history.patches).toEqual([PATCH_HOST_QUEUES, PATCH_LOCAL_TRACE]);
      expect(events.map((e) => [e.generation, e.toState, e.actor.split(':')[0]])).toEqual([
        [1, 'IN_FLIGHT', 'worker'],
        [1, 'IN_FLIGHT', 'worker'],
        [1, 'IN_DOUBT', 'lease-expiry'],
        [1, 'COMPLETED', 'probe'],
      ]);
    } finally {
      survivor.child.kill('SIGKILL');
    }
  });
});
