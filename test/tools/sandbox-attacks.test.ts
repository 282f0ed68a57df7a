/**
 * Attacks on the shell sandbox (issue 12, items 1, 7, 12) against real bubblewrap: a hostile
 * command tries to gain privileges, read the host's secrets, write the host, and exhaust its
 * resources. Every case here succeeded before the sandbox was hardened.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { bashExecute } from '../../activities/tools/bash-execute';
import { runSettled } from '../../activities/settled/run-settled';
import { resetSandboxProbe, SANDBOX_DEFAULT_LIMITS } from '../../activities/tools/sandbox';
import { deriveKey } from '../../core/key';
import type { BashExecuteArgs } from '../../core/tools/bash-execute';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

async function run(command: string, opts: { timeout_ms?: number; workspace?: string } = {}) {
  const workspace = opts.workspace ?? tempWorkspace('attack');
  const args: BashExecuteArgs = { command, timeout_ms: opts.timeout_ms ?? 30_000 };
  const env = { workspace, workspaceRoot: testWorkspaceRoot(), network: false };
  const plan = await bashExecute.plan(args, env);
  if (plan.kind !== 'proceed') throw new Error('expected proceed');
  const obs = await bashExecute.execute(args, plan.intent, env, {
    key: uniqueId('attack'),
    generation: 1,
    assertLeaseHeld: () => {},
    ledger: store.runs,
  });
  return { obs, workspace };
}

/** Through the endpoint record, as the worker runs it: the outcome kind tells NoEffect from IN_DOUBT. */
async function runThroughRecord(command: string, workspace: string) {
  const trajectoryId = uniqueId('attack');
  const args: BashExecuteArgs = { command, timeout_ms: 10_000 };
  const call = {
    key: deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args }),
    trajectoryId,
    turn: 0,
    callId: 'c',
    tool: 'bash_execute',
    args,
  };
  return runSettled(
    store,
    bashExecute,
    call,
    { workspace, workspaceRoot: testWorkspaceRoot(), network: false },
    { leaseMs: 10_000, holder: 'attack-test' },
  );
}

describe('privileges (item 1)', () => {
  it('runs as an unprivileged user without capabilities: a remount fails and the host /usr, /etc and kernel settings stay unwritten', async () => {
    const probe = `/usr/settle-probe-${process.pid}`;
    try {
      const { obs } = await run(
        [
          'echo "uid=$(id -u)"',
          'grep CapEff /proc/self/status',
          'mount -o remount,bind,rw /etc 2>/dev/null && echo remounted-etc',
          'mount -o remount,bind,rw /usr 2>/dev/null && echo remounted-usr',
          `touch ${probe} 2>/dev/null && echo wrote-usr`,
          'echo 1 2>/dev/null > /proc/sys/vm/drop_caches && echo wrote-sysctl',
          'true',
        ].join('; '),
      );
      expect(obs.output).not.toMatch(/uid=0\n/);
      expect(obs.output).toMatch(/CapEff:\s+0000000000000000\n/);
      expect(obs.output).not.toMatch(/remounted|wrote-/);
      expect(fs.existsSync(probe)).toBe(false);
    } finally {
      fs.rmSync(probe, { force: true });
    }
  });

  it('shows /etc only as far as a shell needs (no shadow, no keys) and nothing of the worker: checkout, .settle, database', async () => {
    const hidden = [
      '/etc/shadow',
      '/etc/gshadow',
      '/etc/ssh',
      '/etc/ssl/private',
      PROJECT_ROOT,
      path.join(PROJECT_ROOT, '.settle'),
      '/var/lib/postgresql',
      '/root',
    ];
    const { obs } = await run(
      `for f in ${hidden.join(' ')}; do test -e "$f" && echo "visible $f"; done; echo "user=$(id -un)"; echo 'a b' | awk '{print $2}'; getent hosts localhost | head -1 | awk '{print $1}'`,
    );
    expect(obs.error ?? '').toBe('');
    expect(obs.output).toMatch(/^user=\S+\nb\n(127\.0\.0\.1|::1)\n$/);
  });

  it('files the command creates belong to the workspace owner on the host, and ownership reads the same inside', async () => {
    const workspace = tempWorkspace('owner');
    const owner = fs.statSync(workspace);
    const { obs } = await run('touch made-here && stat -c "%u:%g" . made-here', { workspace });
    const made = fs.statSync(path.join(workspace, 'made-here'));
    expect(made.uid).not.toBe(0);
    expect(`${made.uid}:${made.gid}`).toBe(`${owner.uid}:${owner.gid}`);
    expect(obs.output).toBe(`${owner.uid}:${owner.gid}\n${owner.uid}:${owner.gid}\n`);
  });

  it('never runs a command as root on the host: a root-owned workspace under a root worker is refused with no effect', async () => {
    const workspace = tempWorkspace('rootws');
    if (process.getuid?.() === 0) {
      fs.chownSync(workspace, 0, 0);
      const outcome = await runThroughRecord('touch ran', workspace);
      expect(outcome).toMatchObject({ kind: 'released', detail: expect.stringMatching(/owned by root.*never run.*as root/) });
    } else {
      // A worker that is not root runs the sandbox as itself: nothing can map to root.
      const outcome = await runThroughRecord('touch ran', workspace);
      expect(outcome.kind).toBe('completed');
    }
    expect(fs.existsSync(path.join(workspace, 'ran'))).toBe(process.getuid?.() !== 0);
  });
});

describe('no sandbox (item 7)', () => {
  const saved = { bwrap: process.env.SETTLE_BWRAP, allow: process.env.SETTLE_ALLOW_UNSANDBOXED_SHELL };
  afterEach(() => {
    for (const [name, value] of [
      ['SETTLE_BWRAP', saved.bwrap],
      ['SETTLE_ALLOW_UNSANDBOXED_SHELL', saved.allow],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    resetSandboxProbe();
  });

  it('refuses to run a shell call without bubblewrap: a clear error and NoEffect, not IN_DOUBT; nothing ran', async () => {
    process.env.SETTLE_BWRAP = '/nonexistent/bwrap';
    delete process.env.SETTLE_ALLOW_UNSANDBOXED_SHELL;
    resetSandboxProbe();
    const workspace = tempWorkspace('nosandbox');
    const outcome = await runThroughRecord('touch ran', workspace);
    expect(outcome).toMatchObject({ kind: 'released', detail: expect.stringMatching(/not installed.*SETTLE_ALLOW_UNSANDBOXED_SHELL=1/) });
    expect(fs.existsSync(path.join(workspace, 'ran'))).toBe(false);
  });

  it('runs unsandboxed only when the operator allows it, and says so in the observation', async () => {
    process.env.SETTLE_BWRAP = '/nonexistent/bwrap';
    process.env.SETTLE_ALLOW_UNSANDBOXED_SHELL = '1';
    resetSandboxProbe();
    const { obs, workspace } = await run('touch ran');
    expect(obs.error).toMatch(/not sandboxed/);
    expect(fs.existsSync(path.join(workspace, 'ran'))).toBe(true);
  });
});

describe('resource limits (item 12)', () => {
  const saved = { cpu: process.env.SETTLE_SANDBOX_CPU_SECONDS, file: process.env.SETTLE_SANDBOX_FILE_MIB };
  afterEach(() => {
    for (const [name, value] of [
      ['SETTLE_SANDBOX_CPU_SECONDS', saved.cpu],
      ['SETTLE_SANDBOX_FILE_MIB', saved.file],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('bounds the number of processes (a fork bomb stops at the limit)', async () => {
    const { obs } = await run(
      `perl -e 'my $n = 0; for (1..400) { my $p = fork; last unless defined $p; if (!$p) { sleep 30; exit } $n++ } print "forked=$n\\n"'`,
    );
    const forked = Number(/forked=(\d+)/.exec(obs.output)?.[1]);
    expect(forked).toBeGreaterThan(0);
    expect(forked).toBeLessThan(SANDBOX_DEFAULT_LIMITS.processes);
  });

  it('bounds the memory a process may allocate', async () => {
    const mib = SANDBOX_DEFAULT_LIMITS.memoryMiB + 256;
    const { obs } = await run(`dd if=/dev/zero of=/dev/null bs=${mib}M count=1 && echo allocated`);
    expect(obs.output).not.toMatch(/allocated/);
    expect(obs.error).toMatch(/memory exhausted/);
  });

  it('bounds /tmp and /dev/shm (in-memory file systems)', async () => {
    const mib = SANDBOX_DEFAULT_LIMITS.tmpMiB + 16;
    const { obs } = await run(
      `head -c ${mib}M /dev/zero > /tmp/big && echo tmp-full-size; head -c ${mib}M /dev/zero > /dev/shm/big && echo shm-full-size; true`,
    );
    expect(obs.output).toBe('');
    expect(obs.error).toMatch(/No space left on device/);
  });

  it('bounds the size of a file a command writes in the workspace (a disk on the host)', async () => {
    process.env.SETTLE_SANDBOX_FILE_MIB = '2';
    const { obs, workspace } = await run(
      'head -c 3M /dev/zero > big; echo "status=$?"; head -c 1M /dev/zero > small && echo small-written',
    );
    // SIGXFSZ (25) stops the writer at the limit; a file within it is written whole.
    expect(obs.output).toBe(`status=${128 + 25}\nsmall-written\n`);
    expect(fs.statSync(path.join(workspace, 'big')).size).toBe(2 * 1024 * 1024);
    expect(fs.statSync(path.join(workspace, 'small')).size).toBe(1024 * 1024);
  });

  it('bounds CPU time per process', async () => {
    process.env.SETTLE_SANDBOX_CPU_SECONDS = '1';
    const { obs } = await run('while :; do :; done', { timeout_ms: 20_000 });
    // SIGXCPU (24): killed by the CPU limit, well before the 20 s time limit (124).
    expect(obs.exit_status).toBe(128 + 24);
  });
});
