/**
 * A retry must not run an effect again because the record store forgot the claim of the attempt
 * before it (docs/deploying.md#record-store-failover): the attempt heartbeats its claim right
 * after winning it, and Temporal hands those details to the retry, which writes the record back
 * IN_DOUBT instead of claiming afresh; the probe then settles it from the facts.
 *
 * Real processes: worker A runs a shell command and is SIGKILLed after it (before its completion
 * is recorded); the record is then removed, as a failover to a replica that never received the
 * claim leaves it (test/store/record-store-failover.test.ts does that failover for real); worker B
 * takes Temporal's retry.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { sql } from 'kysely';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { killWorkerProcesses, startWorkerProcess as spawnWorker } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  killWorkerProcesses();
  await db.destroy();
});

function startWorkerProcess(taskQueue: string, failpoints: string) {
  return spawnWorker(WORKER, {
    TEMPORAL_TASK_QUEUE: taskQueue,
    SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
    SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    SETTLE_FAILPOINTS: failpoints,
  });
}

describe('a claim the record store forgot', { timeout: 180_000 }, () => {
  it("Temporal's retry carries the claim its attempt heartbeated: written back IN_DOUBT, probed, and the command runs once", async () => {
    const workspace = tempWorkspace('forgotten-claim');
    const log = path.join(workspace, 'log.txt');
    const taskQueue = uniqueId('forgotten-claim');
    const trajectoryId = uniqueId('forgotten-claim');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    try {
      // The pause after the claim lets its heartbeat leave before the kill.
      const workerA = startWorkerProcess(taskQueue, 'settled.after_claim=sleep:1000,settled.after_execute=kill');
      const handle = await client.workflow.start('trajectoryWorkflow', {
        taskQueue,
        workflowId: trajectoryId,
        args: [
          {
            workspace,
            leaseMs: 2_000,
            turns: [{ turn: 0, calls: [{ call_id: 'append', tool: 'bash_execute', args: { command: 'echo once >> log.txt' } }] }],
          },
        ],
      });
      expect(await workerA.exited).toBe('SIGKILL');
      expect(fs.readFileSync(log, 'utf8')).toBe('once\n');
      const [record] = await store.list({ trajectoryId });
      expect(record).toMatchObject({ state: 'IN_FLIGHT', generation: 1 });
      const key = record!.key;
      // What a failover to a replica that never received the claim leaves: no record, no events.
      await sql`delete from settle_endpoint_records where key = ${key}`.execute(db);
      await sql`delete from settle_endpoint_events where key = ${key}`.execute(db);

      const workerB = startWorkerProcess(taskQueue, '');
      const result: TrajectoryResult = await handle.result();
      workerB.child.kill('SIGTERM');
      expect(await workerB.exited).toBe(0);

      expect(fs.readFileSync(log, 'utf8')).toBe('once\n'); // not run again
      expect(result.calls[0]).toMatchObject({ key, state: 'COMPLETED' });
      expect(await store.get(key)).toMatchObject({ state: 'COMPLETED', generation: 1 });
      const trail = (await store.events(key)).map((e) => [e.generation, e.fromState, e.toState, e.actor.split(':')[0]]);
      expect(trail[0]).toEqual([1, 'UNSEEN', 'IN_DOUBT', 'worker']); // written back by the retry
      expect(trail.at(-1)).toEqual([1, 'IN_DOUBT', 'COMPLETED', 'probe']); // the run markers say it ran
      expect(workerB.output()).toMatch(/claim_forgotten/);
    } finally {
      await connection.close();
    }
  });
});
