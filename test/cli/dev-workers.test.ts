/**
 * `settle dev --workers 2`: two worker processes of their own, both polling, and none left once
 * `settle dev` is gone — even SIGKILLed, when no handler of its own can run (the reaper,
 * stack/reaper.ts, ends them).
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SETTLE_BIN } from '../support/cli';
import { until } from '../support/in-doubt';

const leftovers: number[] = [];
afterAll(() => {
  for (const pid of leftovers) signal(pid, 'SIGKILL');
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
}

describe('settle dev --workers', { timeout: 300_000 }, () => {
  it('runs N worker processes that poll, and none outlives settle dev (SIGKILL)', async () => {
    const dev = spawn(process.execPath, [SETTLE_BIN, 'dev', '--workers', '2'], {
      // A pre-built bundle (inherited by the workers): they start in seconds instead of bundling.
      env: { ...process.env, SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath') },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    leftovers.push(dev.pid!);
    let out = '';
    dev.stdout.on('data', (b: Buffer) => (out += b.toString()));
    dev.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const banner = await until(
      async () => {
        if (dev.exitCode !== null) throw new Error(`settle dev exited (${dev.exitCode}): ${out.slice(-3000)}`);
        return /settle dev is up[\s\S]*\n {2}workers .*\n/.exec(out)?.[0];
      },
      'settle dev is up',
      240_000,
    );
    const pids = /workers +2 processes, pids (\d+) (\d+) /.exec(banner)!.slice(1).map(Number);
    leftovers.push(...pids);
    expect(pids.every(alive)).toBe(true);
    expect(pids).not.toContain(dev.pid);

    // Both poll the task queue: two pollers, one per process (the identity names its pid).
    const address = /TEMPORAL_ADDRESS +(\S+)/.exec(banner)![1]!;
    const connection = await Connection.connect({ address });
    try {
      const client = new Client({ connection });
      const identities = await until(
        async () => {
          const response = await client.workflowService.describeTaskQueue({
            namespace: 'default',
            taskQueue: { name: 'settle', kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          });
          const found = (response.pollers ?? []).map((p) => p.identity ?? '');
          return pids.every((pid) => found.some((id) => id.endsWith(`:${pid}`))) ? found : null;
        },
        'a poller from each worker process',
        120_000,
      );
      expect(identities.filter((id) => pids.some((pid) => id.endsWith(`:${pid}`)))).toHaveLength(2);
    } finally {
      await connection.close();
    }

    // settle dev dies without a chance to clean up: its workers go too.
    process.kill(dev.pid!, 'SIGKILL');
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && pids.some(alive)) await new Promise((r) => setTimeout(r, 200));
    expect(pids.filter(alive)).toEqual([]);
  });
});
