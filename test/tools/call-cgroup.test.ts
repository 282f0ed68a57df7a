/**
 * Per-call totals (issue 12, item 12): every process of a shell call in one cgroup, so the call
 * is bounded in total (memory the per-process rlimits never see, such as in-memory /tmp) and its
 * CPU time and peak memory are recorded with its observation; where the worker cannot manage
 * cgroups, it says so loudly, once, and keeps the per-process limits. Real bubblewrap, real cgroups.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bashExecute } from '../../activities/tools/bash-execute';
import { cgroupSupport, createCallCgroup, resetCgroupSupport } from '../../activities/tools/sandbox-cgroup';
import type { BashExecuteArgs } from '../../core/tools/bash-execute';
import { tempWorkspace, testWorkspaceRoot, uniqueId } from '../support/env';

async function run(command: string) {
  const workspace = tempWorkspace('cgroup');
  const args: BashExecuteArgs = { command, timeout_ms: 60_000 };
  const env = { workspace, workspaceRoot: testWorkspaceRoot(), network: false };
  const plan = await bashExecute.plan(args, env);
  if (plan.kind !== 'proceed') throw new Error('expected proceed');
  return bashExecute.execute(args, plan.intent, env, { key: uniqueId('cgroup'), generation: 1, assertLeaseHeld: () => {} });
}

const saved = { root: process.env.SETTLE_CGROUP_ROOT, total: process.env.SETTLE_SANDBOX_CALL_MEMORY_MIB };
afterEach(() => {
  for (const [name, value] of [
    ['SETTLE_CGROUP_ROOT', saved.root],
    ['SETTLE_SANDBOX_CALL_MEMORY_MIB', saved.total],
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
      expect(createCallCgroup({ processes: 8, callMemoryMiB: 64 })).toBeNull();
      return;
    }
    const cgroup = createCallCgroup({ processes: 8, callMemoryMiB: 64 })!;
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
    if (!supported) return expect(createCallCgroup({ processes: 8, callMemoryMiB: 64 })).toBeNull();
    // A killed worker's group: empty, from long ago. A running call's group: as old, with a process in it.
    const left = createCallCgroup({ processes: 8, callMemoryMiB: 64 })!;
    const busy = createCallCgroup({ processes: 8, callMemoryMiB: 64 })!;
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
