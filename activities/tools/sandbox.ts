/**
 * Runs a shell command in the trajectory's sandbox: bubblewrap (Linux namespaces) where it
 * works, else a plain process — and then says so, in the observation and the log.
 *
 * Inside bubblewrap: a read-only view of the system, the workspace as the only writable
 * directory (and the working directory), private /tmp, /proc and /dev, new PID/IPC/UTS/user
 * namespaces, no network unless granted, a scrubbed environment, and the sandbox dies with its
 * parent. Either way the command runs in its own process group, which is killed as a whole at
 * the time limit, so no child outlives the call.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { TRUNCATION_MARKER } from '../../core/observation';
import { gatedCommand, openGate } from './start-gate';

export const MAX_OUTPUT_BYTES = 64 * 1024;
/** Exit status reported for a command killed at its time limit (as coreutils `timeout` does). */
export const TIMEOUT_EXIT_STATUS = 124;

export type SandboxKind = 'bubblewrap' | 'none';

export interface SandboxRequest {
  command: string;
  /** Real path of the workspace: working directory and the only writable place. */
  workspace: string;
  timeoutMs: number;
  network: boolean;
  /** Called once the command is let through its start gate (its pid leads the process group). */
  onStarted?: (pid: number) => void;
}

export interface SandboxResult {
  stdout: string;
  stderr: string;
  exitStatus: number;
  timedOut: boolean;
  truncated: boolean;
  sandbox: SandboxKind;
  /** Why there is no sandbox, when there is none. */
  note: string | null;
}

const SCRUBBED_ENV = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/tmp',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
};

let probed: { kind: SandboxKind; note: string | null } | undefined;

/** Whether bubblewrap works on this host (checked once per process by running it). */
export function sandboxAvailability(): { kind: SandboxKind; note: string | null } {
  if (probed) return probed;
  const bwrap = findBwrap();
  if (!bwrap) {
    probed = { kind: 'none', note: 'bubblewrap (bwrap) is not installed; the command ran as a plain process without isolation' };
  } else {
    const check = spawnSync(bwrap, ['--ro-bind', '/', '/', '--unshare-all', '--die-with-parent', '--', '/bin/true'], { timeout: 10_000 });
    probed =
      check.status === 0
        ? { kind: 'bubblewrap', note: null }
        : {
            kind: 'none',
            note: `bubblewrap cannot create namespaces here (${check.stderr?.toString().trim() || `exit ${check.status}`}); the command ran as a plain process without isolation`,
          };
  }
  if (probed.note) console.warn(`settle sandbox: ${probed.note}`);
  return probed;
}

export async function runInSandbox(request: SandboxRequest): Promise<SandboxResult> {
  const availability = sandboxAvailability();
  // The command waits at a start gate until the sandbox is armed to die with this worker (start-gate.ts).
  const gated = { ...request, command: gatedCommand(request.command) };
  const [file, args] = availability.kind === 'bubblewrap' ? [findBwrap()!, bubblewrapArgs(gated)] : ['/bin/bash', ['-c', gated.command]];

  const child = spawn(file, args, {
    cwd: request.workspace,
    env: SCRUBBED_ENV,
    detached: true, // its own process group: the time limit kills every descendant
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'], // fd 3: the start gate
  });
  const started = openGate(child).then((opened) => {
    if (opened && child.pid !== undefined) request.onStarted?.(child.pid);
  });
  const stdout = new BoundedBuffer(MAX_OUTPUT_BYTES);
  const stderr = new BoundedBuffer(MAX_OUTPUT_BYTES);
  child.stdout!.on('data', (b: Buffer) => stdout.push(b));
  child.stderr!.on('data', (b: Buffer) => stderr.push(b));

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid!);
  }, request.timeoutMs);

  const exitStatus = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    // 'close' waits for the pipes too: output written just before exit is not lost.
    child.once('close', (code, signal) => resolve(code ?? 128 + signalNumber(signal)));
  }).finally(() => clearTimeout(timer));
  // Whatever the command left running in its group (daemonised children) goes too.
  killGroup(child.pid!);
  await started;

  return {
    stdout: stdout.text(),
    stderr: stderr.text(),
    exitStatus: timedOut ? TIMEOUT_EXIT_STATUS : exitStatus,
    timedOut,
    truncated: stdout.truncated || stderr.truncated,
    sandbox: availability.kind,
    note: availability.note,
  };
}

function bubblewrapArgs(r: SandboxRequest): string[] {
  const roBinds = ['/usr', '/bin', '/lib', '/lib64', '/lib32', '/etc', '/sbin']
    .filter((p) => fs.existsSync(p))
    .flatMap((p) => ['--ro-bind', p, p]);
  return [
    ...roBinds,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--bind',
    r.workspace,
    r.workspace,
    '--chdir',
    r.workspace,
    '--unshare-all',
    ...(r.network ? ['--share-net'] : []),
    '--die-with-parent',
    '--new-session',
    '--',
    '/bin/bash',
    '-c',
    r.command,
  ];
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* group already gone */
  }
}

function findBwrap(): string | null {
  for (const p of ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap']) if (fs.existsSync(p)) return p;
  return null;
}

function signalNumber(signal: NodeJS.Signals | null): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15, SIGSEGV: 11, SIGPIPE: 13 };
  return signal ? (numbers[signal] ?? 0) : 0;
}

/** Keeps the first `limit` bytes of a stream and remembers whether more came. */
class BoundedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    const room = this.limit - this.size;
    if (room <= 0) {
      this.truncated = true;
      return;
    }
    if (chunk.length > room) this.truncated = true;
    const kept = chunk.subarray(0, room);
    this.chunks.push(kept);
    this.size += kept.length;
  }

  text(): string {
    // A multi-byte character cut at the limit decodes to U+FFFD; acceptable at a truncation point.
    const text = Buffer.concat(this.chunks).toString('utf8');
    return this.truncated ? text + TRUNCATION_MARKER : text;
  }
}
