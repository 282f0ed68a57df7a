/**
 * A record whose holder died and whose call is never run again must still become IN_DOUBT and
 * visible (docs/design.md#fencing-and-leases: the lease sweeper), and the trajectory must not
 * report that call as done.
 *
 * Real processes: worker A (no capability keys) starts a shell command and is killed with SIGKILL
 * in the middle of it; worker B holds capability keys, so its policy refuses the retry of a
 * trajectory without a capability. Nothing ever claims the key again.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { callsQuery, type TrajectoryResult } from '../../workflows/trajectory';
import { SA_IN_DOUBT_COUNT, SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { TEST_OPERATOR } from '../support/operator';
import { killWorkerProcesses, startWorkerProcess as spawnWorker, type WorkerProcess } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/settle.js', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  killWorkerProcesses();
  await db.destroy();
});

function startWorkerProcess(taskQueue: string, capabilityKeys: string): WorkerProcess {
  return spawnWorker(WORKER, {
    TEMPORAL_TASK_QUEUE: taskQueue,
    SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
    SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    SETTLE_CAP_KEYS: capabilityKeys,
    SETTLE_ALLOW_NO_CAPABILITY: '',
    SETTLE_FAILPOINTS: '',
  });
}

describe('a holder that dies and is never retried', { timeout: 180_000 }, () => {
  it('its record turns IN_DOUBT by itself, `settle resolve` settles it, and the trajectory never reports the call done', async () => {
    const workspace = tempWorkspace('dead-holder');
    const log = path.join(workspace, 'log.txt');
    const taskQueue = uniqueId('dead-holder');
    const trajectoryId = uniqueId('dead-holder');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    try {
      const workerA = startWorkerProcess(taskQueue, '');
      const handle = await client.workflow.start('trajectoryWorkflow', {
        taskQueue,
        workflowId: trajectoryId,
        args: [
          {
            workspace,
            leaseMs: 2_000,
            turns: [
              {
                turn: 0,
                calls: [
                  { call_id: 'deploy', tool: 'bash_execute', args: { command: 'echo start >> log.txt; sleep 30; echo done >> log.txt' } },
                ],
              },
            ],
          },
        ],
      });
      // The command has begun: kill its worker (the sandbox dies with it).
      await waitFor(async () => fs.existsSync(log) && fs.readFileSync(log, 'utf8') === 'start\n', 90_000);
      workerA.child.kill('SIGKILL');
      expect(await workerA.exited).toBe('SIGKILL');
      const [record] = await store.list({ trajectoryId });
      expect(record).toMatchObject({ state: 'IN_FLIGHT', generation: 1 });
      const key = record!.key;

      // Worker B holds capability keys: it refuses the retry of a trajectory that has no capability.
      const workerB = startWorkerProcess(taskQueue, `k1:${crypto.randomBytes(32).toString('base64')}`);
      // Nothing claims the key again, yet its lapsed lease turns it IN_DOUBT (a generous bound, not a timing goal).
      let seen = record!.state as string;
      await waitFor(
        async () => (seen = (await store.get(key))?.state ?? 'UNSEEN') === 'IN_DOUBT',
        30_000,
        () => `the record is ${seen}`,
      );
      expect(await store.get(key)).toMatchObject({ state: 'IN_DOUBT', generation: 1 });

      // The trajectory waits for the call to be settled: it neither completes nor calls it denied without a record.
      await waitFor(async () => (await handle.describe()).typedSearchAttributes.get(SA_TRAJECTORY_STATUS) === 'waiting_operator', 60_000);
      const described = await handle.describe();
      expect(described.status.name).toBe('RUNNING');
      expect(described.typedSearchAttributes.get(SA_IN_DOUBT_COUNT)).toBe(1);
      expect((await handle.query(callsQuery))[0]).toMatchObject({ key, state: 'IN_DOUBT', resolution: 'pending' });
      expect(workerB.output()).toMatch(/worker's policy|capability_denied/);

      const cli = spawnSync(
        process.execPath,
        [BIN, 'resolve', key, '--as', 'applied', '--reason', 'log.txt shows start, not done: partly applied'],
        { encoding: 'utf8', env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') } },
      );
      expect(cli.stderr).toBe('');
      expect(cli.status).toBe(0);
      expect(cli.stdout).toContain(`: COMPLETED (settled by operator:${TEST_OPERATOR})`);

      const result: TrajectoryResult = await handle.result();
      workerB.child.kill('SIGTERM');
      expect(await workerB.exited).toBe(0);
      // The call is reported as what its record says, refused to run again: never executed, never NO_RECORD.
      expect(result.calls[0]).toMatchObject({ key, state: 'COMPLETED', resolution: 'denied' });
      expect(result.calls[0]!.observation?.error).toMatch(
        new RegExp(`denied by the worker's policy.*COMPLETED at generation 1, settled by operator:${TEST_OPERATOR}`, 's'),
      );
      expect(fs.readFileSync(log, 'utf8')).toBe('start\n'); // the command died with its worker; nobody ran it again
      expect(await store.get(key)).toMatchObject({ state: 'COMPLETED', generation: 1, settledBy: `operator:${TEST_OPERATOR}` });
      expect((await store.events(key)).map((e) => [e.generation, e.fromState, e.toState, e.actor.split(':')[0]])).toEqual([
        [1, 'UNSEEN', 'IN_FLIGHT', 'worker'],
        [1, 'IN_FLIGHT', 'IN_FLIGHT', 'worker'], // intent
        [1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'], // the sweeper, not a claim
        [1, 'IN_DOUBT', 'COMPLETED', 'operator'],
      ]);
    } finally {
      await connection.close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, describeState?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not reached in ${timeoutMs} ms${describeState ? `: ${describeState()}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
