/**
 * `settle dev --workers 2`: two worker processes of their own, both polling, and none left once
 * `settle dev` is gone — even SIGKILLed, when no handler of its own can run (the reaper,
 * stack/reaper.ts, ends them).
 *
 * Ctrl-C on `settle dev` with a shell call in flight: the workers drain first — the command
 * finishes and its record is COMPLETED — then Temporal stops, then PostgreSQL. Ctrl-C is what a
 * terminal sends: SIGINT to the whole foreground process group, here settle dev's own.
 *
 * One file, so its cases run one after the other: every `settle dev` of this checkout uses the
 * same embedded cluster (.settle/pg/data).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { openDatabase } from '../../activities/store/database';
import { DEV_SETTINGS_FILE, type DevSettings } from '../../cli/dev-settings';
import { PROJECT_ROOT, SETTLE_DIR } from '../../stack/paths';
import { runSettle, SETTLE_BIN } from '../support/cli';
import { until } from '../support/in-doubt';
import { tempWorkspace, testWorkspaceRoot, uniqueId } from '../support/env';

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

describe('settle dev --workers', { timeout: 600_000 }, () => {
  it('runs N worker processes that poll, restarts one that dies (same metrics port), lets another join, and none outlives settle dev (SIGKILL)', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'), SETTLE_METRICS_PORT: '0' };
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE']) delete env[name];
    const dev = spawn(process.execPath, [SETTLE_BIN, 'dev', '--workers', '2'], {
      // A pre-built bundle (inherited by the workers): they start in seconds instead of bundling.
      env,
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
        return /settle dev is up[\s\S]*\n {2}join .*\n/.exec(out)?.[0];
      },
      'settle dev is up',
      240_000,
    );
    const pids = /workers +2 processes, pids (\d+) (\d+) /.exec(banner)!.slice(1).map(Number);
    leftovers.push(...pids);
    expect(pids.every(alive)).toBe(true);
    expect(pids).not.toContain(dev.pid);
    expect(banner).toContain('npm run worker');

    // The scrape targets: one stable port per worker, in the file_sd file the banner names.
    const targetsFile = /file_sd: (\S+)\)/.exec(banner)![1]!;
    const [group] = JSON.parse(fs.readFileSync(targetsFile, 'utf8')) as { targets: string[] }[];
    expect(group!.targets).toHaveLength(2);
    const scrape = async (target: string) => (await fetch(`http://${target}/metrics`).catch(() => null))?.status === 200;

    const address = /TEMPORAL_ADDRESS +(\S+)/.exec(banner)![1]!;
    const connection = await Connection.connect({ address });
    let joiner: ReturnType<typeof spawn> | null = null;
    try {
      const client = new Client({ connection });
      const pollers = async () => {
        const response = await client.workflowService.describeTaskQueue({
          namespace: 'default',
          taskQueue: { name: 'settle', kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        });
        return (response.pollers ?? []).map((p) => p.identity ?? '');
      };
      const polling = (pid: number) =>
        until(async () => (await pollers()).some((id) => id.endsWith(`:${pid}`)), `a poller from pid ${pid}`, 120_000);
      // Both poll the task queue: two pollers, one per process (the identity names its pid).
      for (const pid of pids) await polling(pid);
      for (const target of group!.targets) await until(() => scrape(target), `metrics at ${target}`, 60_000);

      // A worker killed: settle dev says so, with who is left, and starts it again on the same metrics port.
      process.kill(pids[0]!, 'SIGKILL');
      const restarted = await until(
        async () => new RegExp(`worker ${pids[0]} restarted as pid (\\d+)`).exec(out)?.[1],
        'the killed worker restarted',
        60_000,
      );
      expect(out).toMatch(new RegExp(`worker ${pids[0]} ended \\(signal SIGKILL\\); 1 of 2 still running; restarting it in 1 s`));
      const second = Number(restarted);
      leftovers.push(second);
      await polling(second);
      const [sameGroup] = JSON.parse(fs.readFileSync(targetsFile, 'utf8')) as { targets: string[] }[];
      expect(sameGroup!.targets).toEqual(group!.targets);
      for (const target of group!.targets) await until(() => scrape(target), `metrics at ${target} after the restart`, 60_000);

      // Both killed at once: the last one's line says nothing polls, not "the others keep polling".
      const before = out.length;
      process.kill(second, 'SIGKILL');
      process.kill(pids[1]!, 'SIGKILL');
      await until(
        async () => out.slice(before).includes('no worker is running: nothing polls until it is back'),
        'the none-left line',
        60_000,
      );
      expect(out).not.toContain('the others keep polling');
      await until(async () => (out.slice(before).match(/restarted as pid/g) ?? []).length === 2, 'both restarted', 90_000);
      const now = [...out.slice(before).matchAll(/restarted as pid (\d+)/g)].map((m) => Number(m[1]));
      leftovers.push(...now);
      for (const pid of now) await polling(pid);

      // A worker started the plain way, without DATABASE_URL, joins this settle dev from its settings.
      joiner = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'workers', 'worker.ts')], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      leftovers.push(joiner.pid!);
      let joinOut = '';
      joiner.stdout!.on('data', (b: Buffer) => (joinOut += b.toString()));
      joiner.stderr!.on('data', (b: Buffer) => (joinOut += b.toString()));
      await until(
        async () => {
          if (joiner!.exitCode !== null) throw new Error(`the joining worker exited (${joiner!.exitCode}): ${joinOut.slice(-3000)}`);
          return joinOut.includes('settle worker: polling');
        },
        'the joining worker polling',
        180_000,
      );
      expect(joinOut).toContain('joining the running settle dev');
      await polling(joiner.pid!);
      pids.push(second, ...now);
    } finally {
      if (joiner) signal(joiner.pid!, 'SIGKILL');
      await connection.close();
    }

    // settle dev dies without a chance to clean up: its workers go too.
    process.kill(dev.pid!, 'SIGKILL');
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && pids.some(alive)) await new Promise((r) => setTimeout(r, 200));
    expect(pids.filter(alive)).toEqual([]);
  });
});

function accepting(address: string): Promise<boolean> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

describe('settle dev stops in order', { timeout: 300_000 }, () => {
  it.each([
    ['its worker in this process', [] as string[]],
    ['a worker process', ['--workers', '1']],
  ])(
    'Ctrl-C with a shell call in flight (%s): the call finishes (COMPLETED), the worker goes, then Temporal, then PostgreSQL',
    async (_mode, flags) => {
      // settle dev's own stack (embedded PostgreSQL, its Temporal), not the test run's.
      const env: NodeJS.ProcessEnv = { ...process.env, SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath') };
      for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE', 'SETTLE_CAP_KEYS'])
        delete env[name];
      env.SETTLE_WORKSPACE_ROOT = testWorkspaceRoot();
      // The stop order is the subject, not the sandbox: the command runs on hosts without bubblewrap too.
      env.SETTLE_ALLOW_UNSANDBOXED_SHELL = '1';
      const dev = spawn(process.execPath, [SETTLE_BIN, 'dev', ...flags], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      leftovers.push(dev.pid!);
      let out = '';
      dev.stdout.on('data', (b: Buffer) => (out += b.toString()));
      dev.stderr.on('data', (b: Buffer) => (out += b.toString()));
      const exited = new Promise<number | null>((resolve) => dev.once('exit', (code) => resolve(code)));
      const banner = await until(
        async () => {
          if (dev.exitCode !== null) throw new Error(`settle dev exited (${dev.exitCode}): ${out.slice(-3000)}`);
          return /settle dev is up[\s\S]*\n {2}workers? .*\n/.exec(out)?.[0];
        },
        'settle dev is up',
        240_000,
      );
      // A worker process is watched by its pid; a worker in settle dev's own process by its call's record.
      const workerPid = flags.length ? Number(/workers +1 processes, pids (\d+) /.exec(banner)![1]) : null;
      if (workerPid) leftovers.push(workerPid);
      const settings = JSON.parse(fs.readFileSync(DEV_SETTINGS_FILE, 'utf8')) as DevSettings;
      const postmasterPid = Number(fs.readFileSync(path.join(SETTLE_DIR, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      const db = openDatabase(settings.databaseUrl, { max: 1 });

      try {
        // A shell call that runs for 8 s.
        const ws = tempWorkspace('dev-stop');
        const id = uniqueId('dev-stop');
        const spec = path.join(ws, 'spec.json');
        fs.writeFileSync(
          spec,
          JSON.stringify({
            trajectoryId: id,
            workspace: ws,
            turns: [
              { turn: 0, calls: [{ call_id: 'slow', tool: 'bash_execute', args: { command: 'sleep 8; echo done', timeout_ms: 60_000 } }] },
            ],
          }),
        );
        const started = await runSettle(['start', spec], {
          env: {
            TEMPORAL_ADDRESS: settings.temporalAddress,
            TEMPORAL_NAMESPACE: settings.namespace,
            TEMPORAL_TASK_QUEUE: settings.taskQueue,
          },
        });
        expect(started).toMatchObject({ code: 0, stdout: `started ${id}\n` });
        const state = async () =>
          (await db.selectFrom('settle_endpoint_records').select('state').where('trajectory_id', '=', id).executeTakeFirst())?.state;
        await until(async () => (await state()) === 'IN_FLIGHT', 'the shell call in flight', 120_000);
        await new Promise((r) => setTimeout(r, 1_000)); // the command is running

        // Ctrl-C, then watch who goes when.
        const t0 = Date.now();
        process.kill(-dev.pid!, 'SIGINT');
        const gone: { completed?: number; worker?: number; temporal?: number; postgres?: number } = {};
        let lastState: string | undefined;
        while (Date.now() - t0 < 120_000 && (gone.temporal === undefined || gone.postgres === undefined)) {
          if (gone.postgres === undefined) lastState = (await state().catch(() => undefined)) ?? lastState;
          const now = Date.now() - t0;
          if (gone.completed === undefined && lastState === 'COMPLETED') gone.completed = now;
          if (workerPid && gone.worker === undefined && !alive(workerPid)) gone.worker = now;
          if (gone.temporal === undefined && !(await accepting(settings.temporalAddress))) gone.temporal = now;
          if (gone.postgres === undefined && !alive(postmasterPid)) gone.postgres = now;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(await exited).toBe(0);
        expect(lastState).toBe('COMPLETED');
        expect(gone.completed!).toBeLessThanOrEqual(gone.temporal!);
        if (workerPid) expect(gone.worker!).toBeLessThanOrEqual(gone.temporal!);
        expect(gone.temporal!).toBeLessThanOrEqual(gone.postgres!);
        expect(gone.completed!).toBeLessThan(gone.postgres!);
        expect(out).toContain('settle dev: stopping: the workers finish their calls first, then Temporal stops, then PostgreSQL');
      } finally {
        await db.destroy().catch(() => {});
      }
    },
  );
});
