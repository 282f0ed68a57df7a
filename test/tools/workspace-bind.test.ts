/**
 * The workspace bind (issue 27, critical 1) against real bubblewrap. A workspace's path was checked,
 * then bound by path: a process that could swap a directory on that path for a symlink to `/`
 * between the two got the host's root bound writable into another trajectory's sandbox. Now the
 * workspace is opened once, the opened directory is checked and bound by descriptor, and a path
 * that passes through a directory a sandboxed command could write (another workspace) is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bashExecute } from '../../activities/tools/bash-execute';
import { runSettled } from '../../activities/settled/run-settled';
import type { ToolEnv } from '../../activities/settled/settled-tool';
import { handOverWorkspace } from '../../activities/tools/sandbox-identity';
import { workspaceRefusal } from '../../activities/workspace';
import { deriveKey } from '../../core/key';
import type { BashExecuteArgs } from '../../core/tools/bash-execute';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

const ROOT = testWorkspaceRoot();
const ATTEMPTS = 40;
const asRoot = process.getuid?.() === 0;

/** Swaps its two arguments (renameat2 RENAME_EXCHANGE) as fast as it can, until the stop file exists. */
const RACER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = (s.encode() for s in sys.argv[1:4])
open(sys.argv[4], 'w').close()
n = 0
while True:
    libc.renameat2(-100, a, -100, b, 2)
    n += 1
    if n % 256 == 0 and os.path.exists(stop):
        break
`;

/** A relative symlink in `dir` that resolves to `/` (relative, so it also resolves to the host's root from inside bubblewrap's old root). */
function linkToRoot(dir: string, name: string): string {
  const link = path.join(dir, name);
  fs.symlinkSync('../'.repeat(dir.split('/').length - 1), link);
  expect(fs.realpathSync(link)).toBe('/');
  return link;
}

/** A file outside every workspace, and a host path a command must never create. */
function hostTargets() {
  const token = crypto.randomUUID();
  const secretDir = fs.mkdtempSync(path.join(ROOT, 'settle-secret-'));
  fs.chmodSync(secretDir, 0o755);
  const secret = path.join(secretDir, 'flag');
  fs.writeFileSync(secret, token, { mode: 0o644 });
  const escaped = (i: number) => path.join(ROOT, `settle-escaped-${token}-${i}`);
  // Relative to the working directory: if the workspace path resolved to the host's /, these name host files.
  const command = (i: number) => `cat ${secret.slice(1)} 2>/dev/null; touch ${escaped(i).slice(1)} 2>/dev/null; true`;
  return { token, secretDir, escaped, command };
}

/** One bash_execute call as the worker runs it (through its endpoint record). */
async function attempt(command: string, workspace: string) {
  const trajectoryId = uniqueId('bind');
  const args: BashExecuteArgs = { command, timeout_ms: 20_000 };
  const call = {
    key: deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args }),
    trajectoryId,
    turn: 0,
    callId: 'c',
    tool: 'bash_execute',
    args,
  };
  const env: ToolEnv = { workspace, workspaceRoot: ROOT, network: false };
  return runSettled(store, bashExecute, call, env, { leaseMs: 20_000, holder: 'bind-test' });
}

function startRacer(cwd: string, a: string, b: string, stop: string): ChildProcess {
  const ready = path.join(cwd, `ready-${crypto.randomUUID()}`);
  const child = spawn('/usr/bin/python3', ['-c', RACER, a, b, stop, ready], { cwd, stdio: 'ignore' });
  return Object.assign(child, { ready });
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

/** Runs B's commands while the racer runs; counts what ran, what was refused, and what escaped. */
async function race(workspace: string, targets: ReturnType<typeof hostTargets>) {
  const tally = { ran: 0, refused: [] as string[], escapes: 0 };
  for (let i = 0; i < ATTEMPTS; i++) {
    const outcome = await attempt(targets.command(i), workspace);
    if (outcome.kind === 'completed') {
      tally.ran++;
      const output = (outcome.result as { output: string }).output;
      if (output.includes(targets.token) || fs.existsSync(targets.escaped(i))) tally.escapes++;
    } else if (outcome.kind === 'released') tally.refused.push(outcome.detail);
    else throw new Error(`unexpected outcome ${JSON.stringify(outcome)}`);
  }
  return tally;
}

describe('the workspace is bound by descriptor', () => {
  it('binds the directory that was checked: a workspace path swapped with a symlink to / while calls start never binds the host', async () => {
    // The swapped directory's parent is the operator's (root's, 0755): no sandboxed command could do
    // this swap; a host process does it here, so that what is tested is the bind itself.
    const parent = fs.mkdtempSync(path.join(ROOT, 'settle-race-'));
    fs.chmodSync(parent, 0o755);
    const workspace = path.join(parent, 'd');
    fs.mkdirSync(workspace);
    handOverWorkspace(workspace);
    const link = linkToRoot(parent, 's');
    const targets = hostTargets();
    const stop = path.join(parent, 'stop');
    const racer = startRacer(parent, workspace, link, stop);
    try {
      await until(() => fs.existsSync((racer as ChildProcess & { ready: string }).ready));
      const tally = await race(workspace, targets);
      console.log(`bind race: ${tally.escapes} escape(s), ${tally.ran} ran, ${tally.refused.length} refused of ${ATTEMPTS}`);
      expect(tally.escapes).toBe(0);
      // A call that found the symlink in place is refused before anything ran; the others ran in the workspace.
      for (const detail of tally.refused) expect(detail).toMatch(/^NoEffect: workspace \S+ /);
      if (asRoot) expect(tally.ran).toBeGreaterThan(0);
    } finally {
      fs.writeFileSync(stop, '');
      await new Promise((r) => racer.once('exit', r));
      for (let i = 0; i < ATTEMPTS; i++) fs.rmSync(targets.escaped(i), { force: true });
      fs.rmSync(targets.secretDir, { recursive: true, force: true });
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });

  it('a workspace nested in another is refused while that one’s command swaps the path (the attack as reported)', async () => {
    const outer = tempWorkspace('outer');
    const inner = path.join(outer, 'd');
    fs.mkdirSync(inner);
    handOverWorkspace(inner);
    linkToRoot(outer, 's');
    fs.writeFileSync(path.join(outer, 'racer.py'), RACER);
    handOverWorkspace(path.join(outer, 'racer.py'));
    const targets = hostTargets();
    // Trajectory A: its own workspace, its own sandbox; its command swaps d and s as fast as it can.
    const args: BashExecuteArgs = { command: 'exec python3 racer.py d s stop ready', timeout_ms: 120_000 };
    const env: ToolEnv = { workspace: outer, workspaceRoot: ROOT, network: false };
    const plan = await bashExecute.plan(args, env);
    if (plan.kind !== 'proceed') throw new Error('expected proceed');
    const racing = bashExecute.execute(args, plan.intent, env, {
      key: uniqueId('racer'),
      generation: 1,
      assertLeaseHeld: () => {},
      ledger: store.runs,
    });
    try {
      await until(() => fs.existsSync(path.join(outer, 'ready')));
      const tally = await race(inner, targets);
      console.log(`nested race: ${tally.escapes} escape(s), ${tally.ran} ran, ${tally.refused.length} refused of ${ATTEMPTS}`);
      expect(tally.escapes).toBe(0);
      expect(tally.ran).toBe(0);
      // Refused as nested, or, when the symlink was in place at that moment, as resolving outside the root.
      for (const detail of tally.refused)
        expect(detail).toMatch(
          /^NoEffect: workspace \S+ (passes through \S+, which a sandboxed command can write|\(→ \/\) must lie inside)/,
        );
      expect(tally.refused.some((d) => d.includes('passes through'))).toBe(true);
    } finally {
      fs.writeFileSync(path.join(outer, 'stop'), '');
      expect((await racing).exit_status).toBe(0);
      for (let i = 0; i < ATTEMPTS; i++) fs.rmSync(targets.escaped(i), { force: true });
      fs.rmSync(targets.secretDir, { recursive: true, force: true });
    }
  });

  it('leaves the command no descriptor of a host directory (one would let openat("..") walk the host)', async () => {
    const workspace = tempWorkspace('fds');
    const args: BashExecuteArgs = {
      command:
        'for f in /proc/$$/fd/*; do [ -d "$f" ] && echo "dir $f -> $(readlink "$f")"; test -e "$f" && n=$((n + 1)); done; echo "open=$n"',
      timeout_ms: 20_000,
    };
    const env: ToolEnv = { workspace, workspaceRoot: ROOT, network: false };
    const plan = await bashExecute.plan(args, env);
    if (plan.kind !== 'proceed') throw new Error('expected proceed');
    const obs = await bashExecute.execute(args, plan.intent, env, {
      key: uniqueId('fds'),
      generation: 1,
      assertLeaseHeld: () => {},
      ledger: store.runs,
    });
    // Its standard descriptors (and bubblewrap's status pipe), none of them a directory.
    expect(obs.output).toMatch(/^open=[3-9]\n$/);
  });
});

describe('workspace rules', () => {
  it('refuses a workspace inside another workspace, with a one-line reason, in the policy check and in the sandbox', async () => {
    const outer = tempWorkspace('outer');
    const inner = path.join(outer, 'inner');
    fs.mkdirSync(inner);
    handOverWorkspace(inner);
    const reason = await workspaceRefusal(inner, ROOT);
    expect(reason).toMatch(new RegExp(`^workspace ${inner} passes through ${outer}, which a sandboxed command can write \\(.+\\)`));
    expect(reason).not.toContain('\n');
    const outcome = await attempt('touch ran', inner);
    expect(outcome).toMatchObject({ kind: 'released', detail: `NoEffect: ${reason}` });
    expect(fs.existsSync(path.join(inner, 'ran'))).toBe(false);
  });

  it('refuses a workspace below a directory its group or others can write', async () => {
    const parent = fs.mkdtempSync(path.join(ROOT, 'settle-shared-'));
    fs.chmodSync(parent, 0o777);
    const workspace = path.join(parent, 'ws');
    fs.mkdirSync(workspace);
    handOverWorkspace(workspace);
    expect(await workspaceRefusal(workspace, ROOT)).toMatch(/passes through \S+, which a sandboxed command can write \(mode 0?777/);
    fs.chmodSync(parent, 0o755);
    // Owned by the operator and writable by it alone: a nested layout the sandbox cannot change.
    expect(await workspaceRefusal(workspace, ROOT)).toBe(asRoot ? null : expect.stringMatching(/owned by the worker's own user/));
  });

  it('a workspace named through a symlink is bound as the directory it resolves to, checked like any other', async () => {
    const real = tempWorkspace('real');
    const parent = fs.mkdtempSync(path.join(ROOT, 'settle-linkparent-'));
    fs.chmodSync(parent, 0o755);
    fs.symlinkSync(real, path.join(parent, 'ws'));
    const outcome = await attempt('pwd; touch ran', path.join(parent, 'ws'));
    expect(outcome).toMatchObject({ kind: 'completed', result: { output: `${real}\n` } });
    expect(fs.existsSync(path.join(real, 'ran'))).toBe(true);
  });
});

describe('the default workspace root, for a worker running as root', () => {
  it.runIf(asRoot)('runs a sandboxed command in a workspace made under it and given to an unprivileged user', async () => {
    const { loadWorkerPolicy } = await import('../../activities/worker-policy');
    const root = loadWorkerPolicy({}).workspaceRoot;
    const workspace = path.join(root, uniqueId('default-root'));
    fs.mkdirSync(workspace, { mode: 0o755 });
    // Given to an unprivileged user, as the refusal of a root-owned workspace says to.
    fs.chownSync(workspace, 65533, 65533);
    try {
      const trajectoryId = uniqueId('default-root');
      const args: BashExecuteArgs = { command: 'echo hello > out.txt && cat out.txt', timeout_ms: 20_000 };
      const call = {
        key: deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args }),
        trajectoryId,
        turn: 0,
        callId: 'c',
        tool: 'bash_execute',
        args,
      };
      const outcome = await runSettled(
        store,
        bashExecute,
        call,
        { workspace, workspaceRoot: root, network: false },
        { leaseMs: 20_000, holder: 'root-test' },
      );
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ kind: 'completed', result: { exit_status: 0, output: 'hello\n' } });
    } finally {
      fs.rmSync(workspace, { recursive: true, force: true });
    }
  });
});
