/**
 * A trajectory whose workspace no worker finds on its disk (its host is down, or it exists
 * nowhere) must not send its workspace calls to the shared queue, where a host holding a stale
 * copy would run them (docs/deploying.md#workers-on-several-hosts): after minutes of asking, the
 * calls are refused and nothing is claimed. Real worker and Temporal; the wait is the real one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { PATCH_UNLOCATED_REFUSED } from '../../workflows/patches';
import { historyOf } from '../support/history';
import { openTestDb, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { killWorkerProcesses, startWorkerProcess } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  killWorkerProcesses();
  await db.destroy();
});

describe('a workspace no host holds', { timeout: 420_000 }, () => {
  it('its calls are refused after the hosts were asked for minutes, never run on the shared queue; nothing is claimed', async () => {
    // Under the worker's root, but on no disk: the host that held it is gone.
    const workspace = path.join(testWorkspaceRoot(), uniqueId('gone-host'));
    const taskQueue = uniqueId('unlocated');
    const trajectoryId = uniqueId('unlocated');
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    const worker = startWorkerProcess(WORKER, {
      TEMPORAL_TASK_QUEUE: taskQueue,
      SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
      SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      SETTLE_FAILPOINTS: '',
    });
    try {
      const result: TrajectoryResult = await client.workflow.execute('trajectoryWorkflow', {
        taskQueue,
        workflowId: trajectoryId,
        args: [
          { workspace, turns: [{ turn: 0, calls: [{ call_id: 'append', tool: 'bash_execute', args: { command: 'echo x >> log.txt' } }] }] },
        ],
      });
      expect(result.calls[0]).toMatchObject({ resolution: 'denied', state: 'NO_RECORD' });
      expect(result.calls[0]!.observation?.error).toMatch(/^not run: no host that is up holds workspace .*; nothing was claimed$/);
      expect(await store.list({ trajectoryId })).toEqual([]);
      expect(fs.existsSync(workspace)).toBe(false);
      // The run recorded the refusal's patch marker: a replay takes the same branch.
      expect((await historyOf(client, trajectoryId)).patches).toContain(PATCH_UNLOCATED_REFUSED);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
      await connection.close();
    }
  });
});
