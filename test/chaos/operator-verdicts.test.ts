/**
 * Operator verdicts belong to one (key, generation), and an IN_DOUBT record can always be settled
 * by an operator — while its trajectory waits, and after the trajectory ended. Real worker
 * processes, killed (SIGKILL) right after a shell command ran, each on its own "host": its run
 * markers (activities/tools/shell-markers.ts) go with it, so each generation's effect is unknown
 * to settle and only an operator can settle it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { SA_IN_DOUBT_COUNT, SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { WorkerProcess } from '../../chaos/infra/worker-process';
import { runSettle } from '../support/cli';
import { historyOf } from '../support/history';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { TEST_OPERATOR } from '../support/operator';

const db = openTestDb(2);
const store = testStore(db);
const workers: WorkerProcess[] = [];
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await db.destroy();
});

const runsDirs = new Map<WorkerProcess, string>();

function startWorker(taskQueue: string, failpoints = ''): WorkerProcess {
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-verdict-runs-'));
  const w = WorkerProcess.start({
    temporalAddress: inject('temporalAddress'),
    databaseUrl: inject('databaseUrl'),
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    failpoints,
    env: { SETTLE_RUNS_DIR: runsDir },
  });
  runsDirs.set(w, runsDir);
  workers.push(w);
  return w;
}

/** The killed worker's host is gone, and its run markers with it: a probe can no longer tell. */
async function hostGone(w: WorkerProcess): Promise<void> {
  expect((await w.exited).signal).toBe('SIGKILL');
  fs.rmSync(runsDirs.get(w)!, { recursive: true, force: true });
}

async function startShellTrajectory(client: Client, taskQueue: string) {
  const workspace = tempWorkspace('verdicts');
  const trajectoryId = uniqueId('verdicts');
  const handle = await client.workflow.start('trajectoryWorkflow', {
    taskQueue,
    workflowId: trajectoryId,
    args: [
      {
        workspace,
        leaseMs: 1_000,
        // Short backoff: a wrong "not executed" loop would give up within seconds.
        backoff: { initialMs: 100, maxMs: 200 },
        turns: [{ turn: 0, calls: [{ call_id: 'deploy', tool: 'bash_execute', args: { command: 'echo run >> deploy.log' } }] }],
      },
    ],
  });
  return { handle, trajectoryId, log: path.join(workspace, 'deploy.log') };
}

async function keyOf(trajectoryId: string): Promise<string> {
  let records = await store.list({ trajectoryId });
  while (records.length === 0) {
    await new Promise((r) => setTimeout(r, 100));
    records = await store.list({ trajectoryId });
  }
  return records[0]!.key;
}

/** Waits until the trajectory waits for an operator on `generation` of its call. */
async function waitingForOperator(handle: WorkflowHandle, key: string, generation: number): Promise<void> {
  await waitFor(async () => {
    const record = await store.get(key);
    const description = await handle.describe();
    if (description.status.name !== 'RUNNING') {
      const calls = ((await handle.result().catch(() => ({ calls: [] }))) as Pick<TrajectoryResult, 'calls'>).calls;
      throw new Error(
        `trajectory ended (${description.status.name}) with record ${record?.state} gen ${record?.generation}: ${JSON.stringify(calls[0])}`,
      );
    }
    const status = description.typedSearchAttributes.get(SA_TRAJECTORY_STATUS);
    return record?.state === 'IN_DOUBT' && record.generation === generation && status === 'waiting_operator';
  }, `waiting_operator on generation ${generation}`);
}

describe('operator verdicts', { timeout: 180_000 }, () => {
  it('a verdict on generation 1 does not settle generation 2: the call waits for an operator again, counted in doubt', async () => {
    const taskQueue = uniqueId('verdicts');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    try {
      const { handle, trajectoryId, log } = await startShellTrajectory(client, taskQueue);
      // Generation 1 runs the command on worker A, which dies before recording it.
      const a = startWorker(taskQueue, 'bash_execute.after_run=kill');
      await hostGone(a);
      const key = await keyOf(trajectoryId);
      // Worker B finds it IN_DOUBT, cannot read A's run markers, and waits for an operator.
      const b = startWorker(taskQueue, 'bash_execute.after_run=kill');
      await waitingForOperator(handle, key, 1);
      // The operator (wrongly) says generation 1 did not run: generation 2 runs it on B, and B dies too.
      const wrong = await runSettle(['resolve', key, '--as', 'not-applied', '--reason', 'no trace in the deploy log'], {
        env: cliEnv,
      });
      expect(wrong.stderr).toBe('');
      expect(wrong.code).toBe(0);
      await hostGone(b);

      // Generation 2 is IN_DOUBT: carol's verdict was about generation 1 and must not settle it.
      startWorker(taskQueue);
      await waitingForOperator(handle, key, 2);
      await new Promise((r) => setTimeout(r, 2_000)); // long enough for a stale-verdict loop to give up
      expect(await store.get(key)).toMatchObject({ state: 'IN_DOUBT', generation: 2 });
      const description = await handle.describe();
      expect(description.status.name).toBe('RUNNING');
      expect(description.typedSearchAttributes.get(SA_TRAJECTORY_STATUS)).toBe('waiting_operator');
      expect(description.typedSearchAttributes.get(SA_IN_DOUBT_COUNT)).toBe(1);

      const right = await runSettle(['resolve', key, '--as', 'applied', '--reason', 'deploy.log shows the second run'], {
        env: cliEnv,
      });
      expect(right.stderr).toBe('');
      expect(right.code).toBe(0);
      const result = (await handle.result()) as TrajectoryResult;
      expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'settled_by_operator' });
      expect(await store.get(key)).toMatchObject({ state: 'COMPLETED', generation: 2, settledBy: `operator:${TEST_OPERATOR}` });
      expect(fs.readFileSync(log, 'utf8')).toBe('run\nrun\n'); // one run per generation, nothing more
      // The operator wait and the record watch came with the combined patch: no marker of their own.
      expect((await historyOf(client, trajectoryId)).patches).toEqual(['settle-2026-12-host-queues']);
    } finally {
      await connection.close();
    }
  });

  it('after its trajectory ended, `settle resolve` settles the record directly, with the audit trail, and says so', async () => {
    const taskQueue = uniqueId('verdicts');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    try {
      const { handle, trajectoryId, log } = await startShellTrajectory(client, taskQueue);
      const a = startWorker(taskQueue, 'bash_execute.after_run=kill');
      await hostGone(a);
      const key = await keyOf(trajectoryId);
      startWorker(taskQueue);
      await waitingForOperator(handle, key, 1);
      await handle.cancel();
      await expect(handle.result()).rejects.toThrow();
      expect((await handle.describe()).status.name).toBe('CANCELLED');

      const cli = await runSettle(['resolve', key, '--as', 'applied', '--reason', 'deploy.log has the run'], {
        env: cliEnv,
      });
      expect(cli.stderr).toBe('');
      expect(cli.code).toBe(0);
      expect(cli.stdout).toContain(`COMPLETED (settled by operator:${TEST_OPERATOR})`);
      expect(cli.stdout).toMatch(/directly on the record: trajectory .* is not running/);
      expect(await store.get(key)).toMatchObject({
        state: 'COMPLETED',
        generation: 1,
        settledBy: `operator:${TEST_OPERATOR}`,
        settleReason: 'deploy.log has the run',
      });
      expect((await store.events(key)).at(-1)).toMatchObject({
        fromState: 'IN_DOUBT',
        toState: 'COMPLETED',
        actor: `operator:${TEST_OPERATOR}`,
      });
      expect(fs.readFileSync(log, 'utf8')).toBe('run\n');

      // A second verdict finds nothing to settle, and says so.
      const again = await runSettle(['resolve', key, '--as', 'not-applied', '--reason', 'again'], { env: cliEnv });
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/KEY argument [0-9a-f]{64}: must name an IN_DOUBT record; this one is COMPLETED, nothing to settle/);
    } finally {
      await connection.close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
