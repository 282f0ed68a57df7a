/**
 * A team's worker process SIGKILLed in the middle of a team tool's call: another worker process
 * takes the call over, the record is found IN_DOUBT, the tool's probe settles it, and the effect
 * (a line in a file, counted there) happens exactly once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { callKey } from '../../api/testing';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import type { teamWorkflow } from './fixtures/workflows';
import { killWorkerProcesses, startWorkerProcess as spawnWorker, type WorkerProcess } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('./fixtures/team-worker.ts', import.meta.url));
const WORKFLOWS = fileURLToPath(new URL('./fixtures/workflows.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);
let bundlePath: string;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  // The team's workflows, bundled once for every worker process of this file.
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: quietLogger });
  bundlePath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-team-bundle-')), 'bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
}, 120_000);

afterAll(async () => {
  killWorkerProcesses();
  await connection?.close();
  await db.destroy();
});

function startWorker(taskQueue: string, failpoints = ''): WorkerProcess {
  return spawnWorker(WORKER, { TEAM_TASK_QUEUE: taskQueue, TEAM_WORKFLOW_BUNDLE: bundlePath, SETTLE_FAILPOINTS: failpoints });
}

describe.each([
  // Claimed with its intent, the line not yet written: the probe finds no line, the call runs on worker B.
  { point: 'settled.after_claim', resolution: 'executed' },
  // The line written, not yet recorded: the probe finds it, the call is settled without running again.
  { point: 'append_line.after_effect', resolution: 'settled_by_probe' },
])('a team worker SIGKILLed at $point', ({ point, resolution }) => {
  it('ends with the effect exactly once, counted in the file', async () => {
    const taskQueue = uniqueId('team-kill');
    const file = path.join(tempWorkspace('team-kill'), 'log.txt');
    const workflowId = uniqueId('team-kill');
    const args = { file, text: 'once' };
    const key = callKey({ workflowId, callId: 'w1', tool: 'append_line', args });

    const a = startWorker(taskQueue, `${point}=kill`);
    const handle = await client.workflow.start<typeof teamWorkflow>('teamWorkflow', {
      workflowId,
      taskQueue,
      args: [[{ tool: 'append_line', args, callId: 'w1' }]],
    });
    expect(await a.exited, a.output()).toBe('SIGKILL');
    expect(a.output()).toContain(`settle failpoint: ${point} → kill`);

    const b = startWorker(taskQueue);
    const [result] = await handle.result();
    b.child.kill('SIGTERM');
    await b.exited;

    expect(result).toMatchObject({ key, resolution, state: 'COMPLETED', result: { appended: 'once' } });
    expect(fs.readFileSync(file, 'utf8')).toBe(`${key} once\n`);
    const record = await store.get(key);
    expect(record?.state).toBe('COMPLETED');
  }, 90_000);
});

const quietLogger = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
