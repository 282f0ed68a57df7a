/**
 * With no worker polling a trajectory's task queue, `settle approve` answers in one line naming
 * the queue, at once — not a bare `9 FAILED_PRECONDITION` after the query's deadline. Terminated,
 * that trajectory's `settle status` reads terminated, not the "running" its workflow last wrote.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { runSettle } from '../support/cli';
import crypto from 'node:crypto';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';

const started: string[] = [];
const db = openTestDb(1);
const store = testStore(db);
afterAll(async () => {
  await db.destroy();
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  for (const id of started)
    await client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => {});
  await connection.close();
});

describe('settle approve with no worker', () => {
  it('says no worker polls the task queue, in one line', async () => {
    const taskQueue = uniqueId('no-worker-queue');
    const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: 'default', TEMPORAL_TASK_QUEUE: taskQueue };
    const ws = tempWorkspace('no-worker');
    const id = uniqueId('no-worker');
    const spec = path.join(ws, 'spec.json');
    fs.writeFileSync(
      spec,
      JSON.stringify({
        trajectoryId: id,
        workspace: ws,
        turns: [{ turn: 0, calls: [{ call_id: 'c', tool: 'bash_execute', args: { command: 'true' } }] }],
      }),
    );
    expect(await runSettle(['start', spec], { env })).toMatchObject({ code: 0, stdout: `started ${id}\n` });
    started.push(id);

    const approved = await runSettle(['approve', id, 'a'.repeat(64), '--reason', 'checked'], { env });
    expect(approved.stdout).toBe('');
    expect(approved.stderr).toBe(
      `settle: no worker polls task queue ${JSON.stringify(taskQueue)}: trajectory ${id} cannot take an approval until one does (start one: npm run worker, or settle dev)\n`,
    );
    expect(approved.code).toBe(2);

    // Terminated from outside, it keeps the settle status its workflow last wrote: it reads terminated, not "running".
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    await new Client({ connection }).workflow.getHandle(id).terminate('on call: abandoned');
    await connection.close();
    const status = await runSettle(['status', id], { env: { ...env, DATABASE_URL: inject('databaseUrl') } });
    expect(status.stdout.split('\n')[0]).toMatch(
      new RegExp(`^${id}: TERMINATED \\(ended while running\\) · in doubt 0 · pending approvals 0$`),
    );
  });
});

describe('settle status with Temporal unreachable', () => {
  it('says so in one line and shows the endpoint records from PostgreSQL, exit 1', async () => {
    const trajectoryId = uniqueId('no-temporal');
    const key = crypto.randomBytes(32).toString('hex');
    await store.claim({ key, trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args: {} }, { leaseMs: 60_000, holder: 'cli-test' });
    await store.markInDoubt(key, 1, 'test: effect unknown', 'worker:cli-test');
    // Nothing listens on port 1.
    const status = await runSettle(['status', trajectoryId], {
      env: { TEMPORAL_ADDRESS: '127.0.0.1:1', DATABASE_URL: inject('databaseUrl') },
    });
    const lines = status.stdout.split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^${trajectoryId}: Temporal is unreachable \\(.+\\): its state is unknown\\. What its endpoint records say:$`),
    );
    expect(lines[1]).toMatch(/^turn +call +tool +key +state +gen +age +since$/);
    expect(lines[2]).toMatch(new RegExp(`^0 +c +file_edit +${key.slice(0, 16)} +IN_DOUBT +1 +\\d+s `));
    expect(status.code).toBe(1);
  });
});
