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
import { tempWorkspace, uniqueId } from '../support/env';

const started: string[] = [];
afterAll(async () => {
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
