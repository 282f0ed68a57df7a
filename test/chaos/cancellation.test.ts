/**
 * Cancelling a trajectory while a settled call is running: the workflow must wait for the running
 * activity before it compensates, or an effect that completes afterwards is recorded COMPLETED
 * and never undone. A real worker process holds the call open after its effect (failpoint
 * `file_edit.after_rename=sleep:…`), and the trajectory is cancelled in that window.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { SA_IN_DOUBT_COUNT, SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { WorkerProcess } from '../../chaos/infra/worker-process';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { historyOf } from '../support/history';

const db = openTestDb(2);
const store = testStore(db);
const workers: WorkerProcess[] = [];

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await db.destroy();
});

async function setup() {
  const taskQueue = uniqueId('cancel');
  const worker = WorkerProcess.start({
    temporalAddress: inject('temporalAddress'),
    databaseUrl: inject('databaseUrl'),
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    // The rename (the effect) is done; the worker then takes 3 s before it records the result.
    failpoints: 'file_edit.after_rename=sleep:3000',
  });
  workers.push(worker);
  await worker.ready();
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const workspace = tempWorkspace('cancel');
  const file = path.join(workspace, 'config.txt');
  fs.writeFileSync(file, 'replicas=1\n');
  const edit = { call_id: 'scale', tool: 'file_edit', args: { path: file, old_str: 'replicas=1', new_str: 'replicas=2' } };
  return { taskQueue, connection, client: new Client({ connection }), workspace, file, edit };
}

async function untilEdited(file: string): Promise<void> {
  while (fs.readFileSync(file, 'utf8') !== 'replicas=2\n') await new Promise((r) => setTimeout(r, 20));
}

describe('cancellation while a settled call runs', { timeout: 120_000 }, () => {
  it('scripted: the running edit finishes, is recorded, and is compensated; the trajectory shows cancelled', async () => {
    const { taskQueue, connection, client, workspace, file, edit } = await setup();
    try {
      const trajectoryId = uniqueId('cancel');
      const handle = await client.workflow.start('trajectoryWorkflow', {
        taskQueue,
        workflowId: trajectoryId,
        args: [{ workspace, turns: [{ turn: 0, calls: [edit] }] }],
      });
      await untilEdited(file);
      await handle.cancel();
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);

      const description = await handle.describe();
      expect(description.status.name).toBe('CANCELLED');
      expect(fs.readFileSync(file, 'utf8')).toBe('replicas=1\n'); // compensated
      const records = await store.list({ trajectoryId });
      expect(records.map((r) => [r.callId, r.state])).toEqual([
        ['scale', 'COMPLETED'],
        ['scale#compensate', 'COMPLETED'],
      ]);
      expect(description.typedSearchAttributes.get(SA_TRAJECTORY_STATUS)).toBe('cancelled');
      expect(description.typedSearchAttributes.get(SA_IN_DOUBT_COUNT)).toBe(0);
      // Waiting for the cancelled activity came with the combined patch: no marker of its own.
      expect((await historyOf(client, trajectoryId)).patches).toEqual(['settle-2026-12-host-queues']);
    } finally {
      await connection.close();
    }
  });

  it('orchestrator-driven: a turn running when the trajectory is cancelled finishes before compensation starts', async () => {
    const { taskQueue, connection, client, workspace, file, edit } = await setup();
    try {
      const settle = new SettleClient(client, taskQueue);
      const trajectoryId = uniqueId('cancel');
      await settle.start(trajectoryId, { workspace });
      const turn = settle.runTurn(trajectoryId, 0, [edit]);
      turn.catch(() => {}); // it ends with the cancellation
      await untilEdited(file);
      await settle.handle(trajectoryId).cancel();
      await expect(settle.result(trajectoryId)).rejects.toBeInstanceOf(WorkflowFailedError);

      expect(fs.readFileSync(file, 'utf8')).toBe('replicas=1\n');
      const records = await store.list({ trajectoryId });
      expect(records.map((r) => [r.callId, r.state])).toEqual([
        ['scale', 'COMPLETED'],
        ['scale#compensate', 'COMPLETED'],
      ]);
      const description = await settle.handle(trajectoryId).describe();
      expect(description.typedSearchAttributes.get(SA_TRAJECTORY_STATUS)).toBe('cancelled');
    } finally {
      await connection.close();
    }
  });
});
