/**
 * Per-call totals (issue 12, item 12): every process of a shell call in one cgroup, so the call
 * is bounded in total (memory the per-process rlimits never see, such as in-memory /tmp) and its
 * CPU time and peak memory are recorded with its observation; where the worker cannot manage
 * cgroups, it says so loudly, once, and keeps the per-process limits. Issue 27: the worker's calls
 * together are bounded too (one group of the worker holds its calls' groups), and the worker runs
 * a bounded number of calls at once. Real bubblewrap, real cgroups.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { bashExecute } from '../../activities/tools/bash-execute';
import { cgroupSupport, createCallCgroup, resetCgroupSupport } from '../../activities/tools/sandbox-cgroup';
import type { BashExecuteArgs } from '../../core/tools/bash-execute';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { NoEffect } from '../../activities/settled/settled-tool';

const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

async function run(command: string) {
  const workspace = tempWorkspace('cgroup');
  const args: BashExecuteArgs = { command, timeout_ms: 60_000 };
  const env = { workspace, workspaceRoot: testWorkspaceRoot(), network: false };
  const plan = await bashExecute.plan(args, env);
  if (plan.kind !== 'proceed') throw new Error('expected proceed');
  return bashExecute.execute(args, plan.intent, env, {
    key: uniqueId('cgroup'),
    generation: 1,
    assertLeaseHeld: () => {},
    ledger: store.runs,
  });
}

const saved = {
  root: process.env.SETTLE_CGROUP_ROOT,
  total: process.env.SETTLE_SANDBOX_CALL_MEMORY_MIB,
  worker: process.env.SETTLE_SANDBOX_WORKER_MEMORY_MIB,
  calls: process.env.SETTLE_SANDBOX_MAX_CALLS,
};
afterEach(() => {
  for (const [name, value] of [
    ['SETTLE_CGROUP_ROOT', saved.root],
    ['SETTLE_SANDBOX_CALL_MEMORY_MIB', saved.total],
    ['SETTLE_SANDBOX_WORKER_MEMORY_MIB', saved.worker],
    ['SETTLE_SANDBOX_MAX_CALLS', saved.calls],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  resetCgroupSupport();
  vi.restoreAllMocks();
});

const MiB = 1024 * 1024;
/** This machine: cgroup v1 writable (then the call is bounded and measured), or not (then the fallback is what must hold). */
const supported = cgroupSupport(() => {}).kind === 'v1';

describe('a cgroup per shell call', () => {
  it("bounds the call's memory in total: an in-memory /tmp file no rlimit counts is stopped at the call's total", async () => {
    process.env.SETTLE_SANDBOX_CALL_MEMORY_MIB = '64';
    // 100 MiB in /tmp: under /tmp's own size (256 MiB), outside RLIMIT_DATA (no process holds it).
    const obs = await run('head -c 100M /dev/zero > /tmp/big; echo "wrote $(stat -c %s /tmp/big)"');
    if (supported) {
      expect(obs.output).not.toMatch(new RegExp(`wrote ${100 * MiB}`));
      expect(obs.error).toMatch(/the call reached its memory total \(64 MiB, SETTLE_SANDBOX_CALL_MEMORY_MIB\): \d+ process\(es\) killed/);
      expect(obs.resources!.peak_memory_bytes).toBeLessThanOrEqual(64 * MiB);
    } else {
      expect(obs.output).toBe(`wrote ${100 * MiB}\n`);
      expect(obs.resources).toBeUndefined();
    }
  });

  it("records the call's totals: CPU time and peak memory of all its processes together", async () => {
    const obs = await run(
      `perl -e '$x = "a" x (96 * 1024 * 1024); $i = 0; $i++ while $i < 5e6; print "done\\n"' & perl -e '$i = 0; $i++ while $i < 5e6'; wait`,
    );
    expect(obs.output).toBe('done\n');
    if (supported) {
      expect(obs.resources!.peak_memory_bytes).toBeGreaterThanOrEqual(96 * MiB);
      expect(obs.resources!.cpu_ms).toBeGreaterThan(0);
      expect(obs.resources!.peak_processes).toBeGreaterThanOrEqual(3); // bash and two perls
    } else {
      expect(obs.resources).toBeUndefined();
    }
  });

  it('is removed with everything left in it when the call ends', async () => {
    if (!supported) {
      expect(createCallCgroup({ processes: 8, callMemoryMiB: 64, workerMemoryMiB: 1024 })).toBeNull();
      return;
    }
    const cgroup = createCallCgroup({ processes: 8, callMemoryMiB: 64, workerMemoryMiB: 1024 })!;
    const dirs = cgroup.procsFiles.map((f) => path.dirname(f));
    expect(
      fs
        .readFileSync(
          path.join(
            dirs.find((d) => d.includes('/pids/'))!,
            'pids.max',
          ),
          'utf8',
        )
        .trim(),
    ).toBe('8');
    await cgroup.remove();
    for (const d of dirs) expect(fs.existsSync(d)).toBe(false);
  });

  it("a worker's start removes empty groups its killed predecessors left, never a group in use", async () => {
    if (!supported) return expect(createCallCgroup({ processes: 8, callMemoryMiB: 64, workerMemoryMiB: 1024 })).toBeNull();
    // A killed worker's group: empty, from long ago. A running call's group: as old, with a process in it.
    const left = createCallCgroup({ processes: 8, callMemoryMiB: 64, workerMemoryMiB: 1024 })!;
    const busy = createCallCgroup({ processes: 8, callMemoryMiB: 64, workerMemoryMiB: 1024 })!;
    const join = busy.procsFiles.map((f) => `echo $$ > ${f}`).join(' && ');
    const sleeper = spawn('/bin/sh', ['-c', `${join} && exec sleep 60`]);
    const busyPids = busy.procsFiles.find((f) => f.includes('/pids/'))!;
    while (fs.readFileSync(busyPids, 'utf8').trim() === '') await new Promise((r) => setTimeout(r, 20)); // until it joined
    const old = new Date('2020-01-01');
    for (const f of [...left.procsFiles, ...busy.procsFiles]) fs.utimesSync(path.dirname(f), old, old);
    resetCgroupSupport();
    cgroupSupport(); // as at a worker's start
    for (const f of left.procsFiles) expect(fs.existsSync(path.dirname(f))).toBe(false);
    for (const f of busy.procsFiles) expect(fs.existsSync(path.dirname(f))).toBe(true);
    const exited = new Promise((r) => sleeper.once('exit', r));
    await busy.remove(); // kills the sleeper
    await exited;
    for (const f of busy.procsFiles) expect(fs.existsSync(path.dirname(f))).toBe(false);
  });

  it("a worker's start survives a sibling worker removing a dead worker's group while it sweeps", () => {
    // Workers started together sweep the same groups: a dead worker's group listed by one may be
    // gone by the time it reads it. A dangling symlink is such an entry, at every read. A plain
    // directory tree stands in for the cgroup v1 hierarchy (the sweep only lists and removes).
    const root = fs.mkdtempSync(path.join(testWorkspaceRoot(), 'cgroup-root-'));
    for (const controller of ['memory', 'pids', 'cpuacct']) {
      const settleGroup = path.join(root, controller, 'settle');
      fs.mkdirSync(settleGroup, { recursive: true });
      fs.writeFileSync(path.join(settleGroup, 'cgroup.procs'), '');
      // No process has a pid above the kernel's pid_max (at most 2^22).
      fs.symlinkSync(path.join(root, 'removed'), path.join(settleGroup, `worker-${2 ** 22 + 1}-gone`));
    }
    process.env.SETTLE_CGROUP_ROOT = root;
    resetCgroupSupport();
    expect(cgroupSupport(() => {}).kind).toBe('v1');
  });

  it('without cgroups: says so loudly, once, and the call still runs with its per-process limits', async () => {
    process.env.SETTLE_CGROUP_ROOT = '/nonexistent/cgroup';
    resetCgroupSupport();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const first = await run('echo ran');
    const second = await run('echo again');
    expect([first.output, second.output]).toEqual(['ran\n', 'again\n']);
    expect(first.resources).toBeUndefined();
    const lines = warn.mock.calls.map((c) => String(c[0])).filter((l) => l.includes('cgroup'));
    expect(lines).toEqual([
      expect.stringMatching(
        /^settle sandbox: WARNING: no per-call cgroup \(.*\/nonexistent\/cgroup.*\); shell calls are bounded per process only/,
      ),
    ]);
  });
});

describe("the worker's bound across calls", () => {
  it('runs at most SETTLE_SANDBOX_MAX_CALLS shell calls at once: one more is refused as not executed, saying why', async () => {
    process.env.SETTLE_SANDBOX_MAX_CALLS = '2';
    const outcomes = await Promise.allSettled([run('sleep 3; echo done'), run('sleep 3; echo done'), run('sleep 3; echo done')]);
    const done = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(done.map((o) => o.value.output)).toEqual(['done\n', 'done\n']);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.reason).toBeInstanceOf(NoEffect);
    expect(String(refused[0]!.reason.message)).toMatch(
      /^this worker already runs 2 shell calls, as many as it runs at once \(SETTLE_SANDBOX_MAX_CALLS=2\); the command was not started$/,
    );
    // A slot is free again once a call ended.
    expect((await run('echo again')).output).toBe('again\n');
  });

  it("bounds the worker's calls together: calls each under their own total are killed when together they pass the worker's", async () => {
    process.env.SETTLE_SANDBOX_WORKER_MEMORY_MIB = '256';
    // Three calls, each holding 150 MiB (under its own 2 GiB) long enough to overlap.
    const hold = `python3 -c "import time; b = b'x' * (150 << 20); print('held', flush=True); time.sleep(8)"`;
    const results = await Promise.all([run(hold), run(hold), run(hold)]);
    const held = results.filter((r) => r.exit_status === 0);
    if (supported) {
      expect(held.length).toBeLessThanOrEqual(1);
      for (const killed of results.filter((r) => r.exit_status !== 0))
        expect(killed.error).toMatch(
          /this worker's shell calls together reached their memory total \(256 MiB, SETTLE_SANDBOX_WORKER_MEMORY_MIB\): \d+ process\(es\) killed/,
        );
    } else {
      expect(held).toHaveLength(3); // the documented fallback: per-process limits only
    }
  });
});
