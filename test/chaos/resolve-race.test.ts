/**
 * The race between a probe's answer and the workflow's wait for an operator: an SRE runs
 * `settle resolve` while the probe that will answer "unknown, and no later probe can tell" is
 * still out. The trajectory does not wait for the call yet, so its settleCall validator refuses
 * the update and `settle resolve` settles the record directly. The trajectory must still notice
 * the settled record once it starts waiting, instead of waiting for a verdict that was already given.
 *
 * Real worker processes: the first is killed (SIGKILL) right after its shell command started, so
 * the command dies with it and a probe can only answer a final unknown. The second stops (SIGSTOP)
 * right after its probe answered, before returning it, and resumes once the record was settled.
 */
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { settleByOperator } from '../../activities/settled/operator-settlement';
import type { TrajectoryResult } from '../../workflows/trajectory';
import type { WorkerProcess } from '../../chaos/infra/worker-process';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { inDoubtShellCall, until, workerProcess } from '../support/in-doubt';
import { onCall, signed, TEST_OPERATOR } from '../support/operator';
import { resolveCall } from '../../cli/resolve-call';
import { SettleClient } from '../../client/index';

const db = openTestDb(2);
const store = testStore(db);
const workers: WorkerProcess[] = [];

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await db.destroy();
});

function startWorker(taskQueue: string, failpoints: string): WorkerProcess {
  const w = workerProcess(taskQueue, failpoints);
  workers.push(w);
  return w;
}

/** What each probe answered the workflow (from its history): its result, or a probe that could not tell, its failure's details. */
async function probeAnswers(handle: WorkflowHandle): Promise<unknown[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  const probes = new Set(
    events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'probeToolCall').map((e) => String(e.eventId)),
  );
  return events.flatMap((e) => {
    const completed = e.activityTaskCompletedEventAttributes;
    const failed = e.activityTaskFailedEventAttributes;
    const payload =
      completed && probes.has(String(completed.scheduledEventId))
        ? completed.result?.payloads?.[0]
        : failed && probes.has(String(failed.scheduledEventId))
          ? failed.failure?.applicationFailureInfo?.details?.payloads?.[0]
          : undefined;
    if (!payload) return [];
    const answer = JSON.parse(Buffer.from(payload.data!).toString('utf8'));
    return [{ state: answer.state, final: answer.final, generation: answer.generation }];
  });
}

describe('settle resolve racing the wait for an operator', { timeout: 240_000 }, () => {
  it('a record settled directly between the probe’s final unknown and the wait is noticed: the trajectory completes', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    try {
      const taskQueue = uniqueId('tq-race');
      const trajectoryId = uniqueId('race');
      const handle = await client.workflow.start('trajectoryWorkflow', {
        taskQueue,
        workflowId: trajectoryId,
        args: [
          {
            workspace: tempWorkspace('race'),
            leaseMs: 1_000,
            turns: [{ turn: 0, calls: [{ call_id: 'deploy', tool: 'bash_execute', args: { command: 'echo deployed >> deploy.log' } }] }],
          },
        ],
      });
      const dying = startWorker(taskQueue, 'bash_execute.after_start=kill');
      expect((await dying.exited).signal).toBe('SIGKILL');

      const prober = startWorker(taskQueue, 'probe.after_answer=stop');
      await until(async () => prober.stopped, 'the worker stopped after its probe answered');
      const record = await until(async () => (await store.list({ trajectoryId }))[0], 'a record');
      expect(record).toMatchObject({ state: 'IN_DOUBT' });

      // The SRE resolves now. The trajectory does not wait for the call yet (its probe is out), so
      // `settle resolve` takes its record path (cli/resolve-call.ts): this very statement. (Through
      // the CLI, the refused update would first wait for the stopped worker's workflow task to time
      // out, long enough for the probe to time out and be retried, which would hide the race.)
      const claim = { key: record.key, verdict: 'applied' as const, reason: 'deploy.log has the line', generation: record.generation };
      const credential = signed({ purpose: 'settle', namespace: 'default', trajectoryId, ...claim });
      const settled = await settleByOperator(store, { ...claim, credential }, { keys: onCall().keys, namespace: 'default' });
      expect(settled).toEqual({ settled: true, state: 'COMPLETED', generation: record.generation });
      prober.signal('SIGCONT');

      const done = await until(async () => {
        const status = (await handle.describe()).status.name;
        return status === 'RUNNING' ? null : status;
      }, 'the trajectory to end after its record was settled by the operator');
      // The race was hit: the workflow got the probe's stale answer (IN_DOUBT, final), not a later probe's.
      expect(await probeAnswers(handle)).toEqual([{ state: 'IN_DOUBT', final: true, generation: record.generation }]);
      expect(done).toBe('COMPLETED');
      const result = (await handle.result()) as TrajectoryResult;
      expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'settled_by_operator' });
      expect(await store.get(record.key)).toMatchObject({
        state: 'COMPLETED',
        generation: record.generation,
        settledBy: `operator:${TEST_OPERATOR}`,
      });
    } finally {
      await connection.close();
    }
  });
});

/** The watch activity's events: scheduled, and what ended it. */
async function watchEvents(handle: WorkflowHandle): Promise<string[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  const watch = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'watchRecord');
  if (!watch) return [];
  const id = String(watch.eventId);
  const of = (e: (typeof events)[number]) =>
    [
      e.activityTaskCancelRequestedEventAttributes?.scheduledEventId,
      e.activityTaskCompletedEventAttributes?.scheduledEventId,
      e.activityTaskFailedEventAttributes?.scheduledEventId,
      e.activityTaskCanceledEventAttributes?.scheduledEventId,
      e.activityTaskTimedOutEventAttributes?.scheduledEventId,
    ].some((s) => String(s) === id);
  return ['scheduled', ...events.filter(of).map((e) => temporal.api.enums.v1.EventType[e.eventType!])];
}

describe('the watched wait for an operator', { timeout: 240_000 }, () => {
  it('a verdict through the update ends the wait and cancels the watch; a cancelled trajectory ends cancelled', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    try {
      const first = await inDoubtShellCall(client, store);
      workers.push(first.worker);
      const second = await inDoubtShellCall(client, store);
      workers.push(second.worker);
      const resolution = await resolveCall(
        new SettleClient(client, first.taskQueue),
        store,
        { key: first.key, verdict: 'not_applied', reason: 'no line in deploy.log' },
        onCall(),
      );
      expect(resolution).toMatchObject({ path: 'update', state: 'NOT_EXECUTED' });
      const result = (await first.handle.result()) as TrajectoryResult;
      expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'executed' });
      // One watch for the whole wait, cancelled once the verdict came.
      expect((await watchEvents(first.handle)).slice(0, 2)).toEqual(['scheduled', 'EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED']);

      await second.handle.cancel();
      await expect(second.handle.result()).rejects.toThrow();
      expect((await second.handle.describe()).status.name).toBe('CANCELLED');
      expect(await store.get(second.key)).toMatchObject({ state: 'IN_DOUBT' });
    } finally {
      await connection.close();
    }
  });
});
