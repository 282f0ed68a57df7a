/**
 * Runs a shell command in the trajectory's sandbox (bubblewrap, Linux namespaces); see
 * docs/sandbox.md for what each layer guarantees.
 *
 * Inside bubblewrap: a new user namespace in which the command is an unprivileged user with no
 * capabilities (so no mount, not even a remount of a read-only bind), and which maps to an
 * unprivileged host user (sandbox-identity.ts); read-only /usr and library directories; a
 * curated read-only /etc (sandbox-etc.ts); the workspace as the only writable host directory
 * (and the working directory), bound by the descriptor that was checked (workspace-dir.ts); private, size-limited /tmp and /dev/shm; its own /proc, PID, IPC,
 * UTS and network namespaces (no network, not even the host's loopback; with the `connect` right,
 * only an egress proxy for the capability's `host:` objects, egress-proxy.ts); a scrubbed environment;
 * process, memory and CPU limits (sandbox-limits.ts), and totals for the whole call in a cgroup of
 * its own where the worker can (sandbox-cgroup.ts); and it dies with its parent. The command
 * runs in its own process group, killed as a whole at the time limit, so no child outlives it.
 *
 * Without a working bubblewrap, shell calls are refused (SandboxRefused) unless the worker's
 * operator sets SETTLE_ALLOW_UNSANDBOXED_SHELL=1.
 */
import { spawn, spawnSync } from 'node:child_process';
import { gatedCommand, openGate } from './start-gate';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { PROJECT_ROOT } from '../installation';
import { SETTLE_DIR } from '../state-dir';
import { TRUNCATION_MARKER } from '../../core/observation';
import { isWithin } from '../../core/paths';
import { ETC_FILES, syntheticEtc } from './sandbox-etc';
import { allowedInternal } from './egress-policy';
import { startEgressProxy, type EgressProxy } from './egress-proxy';
import { InputError } from '../../core/errors';
import type { ResourceUsage } from '../../core/observation';
import { createCallCgroup, joinCgroupLaunch, type CallCgroup } from './sandbox-cgroup';
import { defaultSandboxOwner, sandboxIdentity } from './sandbox-identity';
import { openWorkspace, type OpenedWorkspace } from '../workspace-dir';
import { sandboxLimits, ulimitScript, type SandboxLimits } from './sandbox-limits';

export { SANDBOX_DEFAULT_LIMITS } from './sandbox-limits';

export const MAX_OUTPUT_BYTES = 64 * 1024;
/** Exit status reported for a command killed at its time limit (as coreutils `timeout` does). */
export const TIMEOUT_EXIT_STATUS = 124;
/** The worker's environment variable that allows shell calls without a sandbox (off by default). */
export const ALLOW_UNSANDBOXED = 'SETTLE_ALLOW_UNSANDBOXED_SHELL';

export type SandboxKind = 'bubblewrap' | 'none';

export interface SandboxRequest {
  command: string;
  /**
   * The workspace: working directory and the only writable place. Opened from the root by
   * descriptor and checked (workspace-dir.ts); bubblewrap binds that descriptor, never the path.
   */
  workspace: string;
  /** The worker's workspace root (the real path its policy holds). */
  workspaceRoot: string;
  timeoutMs: number;
  /**
   * The capability's `connect` right. With it (and `egress` hosts) the command reaches exactly
   * those hosts through the call's egress proxy; without it, no network at all.
   */
  network: boolean;
  /** The capability's `host:` objects (canonical), reached through the egress proxy when `network`. */
  egress?: readonly string[];
  /** Called once the command is let through its start gate (start-gate.ts; its pid leads the process group). */
  onStarted?: (pid: number) => void;
}

export interface SandboxResult {
  stdout: string;
  stderr: string;
  exitStatus: number;
  timedOut: boolean;
  truncated: boolean;
  sandbox: SandboxKind;
  /** Why there is no sandbox, or what it did not grant, when that matters to the reader. */
  note: string | null;
  /** The call's totals from its cgroup; null where the worker has none (sandbox-cgroup.ts). */
  usage: ResourceUsage | null;
}

/** The command was not started: no sandbox it may run in. Nothing happened (a NoEffect). */
export class SandboxRefused extends Error {
  override readonly name = 'SandboxRefused';
}

const SCRUBBED_ENV: Record<string, string> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/tmp',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
};

/** The worker's own checkout: never inside a sandbox (its .settle/ holds keys, settings and database files). */
const WORKER_ROOT = PROJECT_ROOT.replace(/\/$/, '');
const SYSTEM_DIRS = ['/usr', '/etc', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/boot', '/dev', '/proc', '/sys'];
const READ_ONLY_SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

let probed: { kind: SandboxKind; note: string | null } | undefined;

/** Forgets the start-up probe (the next call probes again; tests change SETTLE_BWRAP). */
export function resetSandboxProbe(): void {
  probed = undefined;
}

/** Whether bubblewrap works on this host, with the flags settle needs (checked once per process by running it). */
export function sandboxAvailability(): { kind: SandboxKind; note: string | null } {
  if (probed) return probed;
  const bwrap = findBwrap();
  if (!bwrap) {
    probed = { kind: 'none', note: `bubblewrap (bwrap) is not installed (looked for ${bwrapCandidates().join(', ')})` };
  } else {
    const check = spawnSync(
      bwrap,
      [
        '--ro-bind',
        '/',
        '/',
        '--unshare-all',
        '--unshare-user',
        '--disable-userns',
        '--cap-drop',
        'ALL',
        '--die-with-parent',
        '--size',
        '1048576',
        '--tmpfs',
        '/tmp',
        '--',
        '/bin/true',
      ],
      { timeout: 10_000, ...(process.getuid?.() === 0 ? defaultSandboxOwner() : {}) },
    );
    probed =
      check.status === 0
        ? { kind: 'bubblewrap', note: null }
        : {
            kind: 'none',
            note: `bubblewrap cannot create an unprivileged sandbox here (${check.stderr?.toString().trim() || check.error?.message || `exit ${check.status}`}); settle needs bubblewrap 0.8 or later and unprivileged user namespaces`,
          };
  }
  if (probed.note) console.warn(`settle sandbox: ${probed.note}`);
  return probed;
}

function unsandboxedAllowed(): boolean {
  return process.env[ALLOW_UNSANDBOXED] === '1';
}

/** Shell calls this worker runs now (bounded by SETTLE_SANDBOX_MAX_CALLS). */
let runningCalls = 0;

export async function runInSandbox(request: SandboxRequest): Promise<SandboxResult> {
  const limits = sandboxLimits();
  // Refused, not queued: the call is released as not executed and its workflow tries again later.
  if (runningCalls >= limits.maxCalls)
    throw new SandboxRefused(
      `this worker already runs ${runningCalls} shell calls, as many as it runs at once (SETTLE_SANDBOX_MAX_CALLS=${limits.maxCalls}); the command was not started`,
    );
  runningCalls++;
  try {
    const workspace = openWorkspace(path.resolve(request.workspace), request.workspaceRoot);
    if ('refusal' in workspace) throw new SandboxRefused(workspace.refusal);
    try {
      return await runInWorkspace(request, workspace, limits);
    } finally {
      fs.closeSync(workspace.fd);
    }
  } finally {
    runningCalls--;
  }
}

async function runInWorkspace(request: SandboxRequest, workspace: OpenedWorkspace, limits: SandboxLimits): Promise<SandboxResult> {
  const availability = sandboxAvailability();
  // What the call starts besides its processes; taken down in one place, on every path.
  const started: { proxy?: EgressProxy; cgroup?: CallCgroup | null } = {};
  let ran: Ran;
  let note: string | null;
  try {
    const prepared = await prepareLaunch(request, workspace, limits, availability, started);
    note = prepared.note;
    // Every process of the call in its own cgroup: totals bounded and measured (where supported).
    started.cgroup = createCallCgroup(limits, prepared.launch.identity);
    ran = await launchAndWait(request, workspace, prepared.launch, started.cgroup, !!started.proxy);
  } finally {
    await started.cgroup?.remove();
    await started.proxy?.close();
  }
  if (started.proxy) {
    const { allowed, refused } = started.proxy.stats;
    // Only refusals are news (and a note makes the observation read as an error).
    if (refused.length)
      note =
        `network only through the egress proxy, to ${request.egress!.join(', ')}: ${allowed} connection(s) allowed, ` +
        `${refused.length} refused (${refused.slice(0, 3).join('; ')})`;
  }
  if (ran.oomKills) {
    const total = ran.reachedCallMemory
      ? `the call reached its memory total (${limits.callMemoryMiB} MiB, SETTLE_SANDBOX_CALL_MEMORY_MIB)`
      : `this worker's shell calls together reached their memory total (${limits.workerMemoryMiB} MiB, SETTLE_SANDBOX_WORKER_MEMORY_MIB)`;
    const oom = `${total}: ${ran.oomKills} process(es) killed`;
    note = note ? `${note}; ${oom}` : oom;
  }
  return {
    stdout: ran.stdout,
    stderr: ran.stderr,
    exitStatus: ran.timedOut ? TIMEOUT_EXIT_STATUS : ran.exitStatus,
    timedOut: ran.timedOut,
    truncated: ran.truncated,
    sandbox: availability.kind,
    note,
    usage: ran.usage,
  };
}

/**
 * How the command is started: in bubblewrap (with the egress proxy it needs, recorded in
 * `started` as soon as it runs), or, where the operator allows it, as a plain process.
 */
async function prepareLaunch(
  request: SandboxRequest,
  workspace: OpenedWorkspace,
  limits: SandboxLimits,
  availability: { kind: SandboxKind; note: string | null },
  started: { proxy?: EgressProxy },
): Promise<{ launch: Launch; note: string | null }> {
  if (availability.kind === 'bubblewrap') {
    const overlap = forbiddenWorkspace(workspace.path);
    if (overlap) throw new SandboxRefused(`workspace ${workspace.path} ${overlap}; it cannot be the sandbox's writable directory`);
    const identity = sandboxIdentity(workspace.path, workspace.stat);
    if (identity.kind === 'refused') throw new SandboxRefused(identity.reason);
    // The command waits at a start gate (the descriptor after bubblewrap's data files) until the
    // sandbox is armed to die with this worker (start-gate.ts).
    const hosts = request.network ? (request.egress ?? []) : [];
    if (hosts.length) {
      // The proxy first: the sandbox binds its socket. Its owner is the sandbox's host user.
      let allowInternal: Set<string>;
      try {
        allowInternal = allowedInternal();
      } catch (err) {
        if (err instanceof InputError) throw new SandboxRefused(`the worker's egress setting is invalid: ${err.message}`);
        throw err;
      }
      started.proxy = await startEgressProxy({ grants: hosts, allowInternal }, identity);
    }
    const launch = bubblewrapLaunch(request.command, workspace, identity, limits, started.proxy?.socketPath ?? null);
    launch.args[launch.args.lastIndexOf(request.command)] = gatedCommand(request.command, 3 + launch.files.length);
    const note =
      request.network && !hosts.length
        ? 'the connect right grants no network here: the capability names no host: objects (the command ran without network)'
        : null;
    return { launch, note };
  }
  if (!unsandboxedAllowed()) {
    throw new SandboxRefused(
      `${availability.note}; shell commands run only in the sandbox. The worker's operator may allow unsandboxed ` +
        `commands with ${ALLOW_UNSANDBOXED}=1 (they can then read the worker's secrets, reach its database and write whatever the worker can)`,
    );
  }
  console.warn(`settle sandbox: ${ALLOW_UNSANDBOXED}=1: running a shell command WITHOUT a sandbox in ${workspace.path}`);
  return {
    launch: {
      file: '/bin/bash',
      args: ['-c', `${ulimitScript(limits)}; exec /bin/bash -c "$1"`, 'settle', gatedCommand(request.command, 3)],
      files: [],
    },
    note: `not sandboxed: ${availability.note}; allowed by ${ALLOW_UNSANDBOXED}=1`,
  };
}

/** What the command did, read before its cgroup goes. */
interface Ran {
  stdout: string;
  stderr: string;
  exitStatus: number;
  timedOut: boolean;
  truncated: boolean;
  usage: ResourceUsage | null;
  oomKills: number;
  reachedCallMemory: boolean;
}

/** Spawns the launch, lets it through its start gate, and waits for it (and its process group) to end. */
async function launchAndWait(
  request: SandboxRequest,
  workspace: OpenedWorkspace,
  launch: Launch,
  cgroup: CallCgroup | null,
  proxied: boolean,
): Promise<Ran> {
  const spawned = cgroup ? joinCgroupLaunch(cgroup.procsFiles, launch.file, launch.args) : launch;
  const child = spawn(spawned.file, spawned.args, {
    cwd: launch.identity ? '/' : workspace.path,
    env: proxied ? { ...SCRUBBED_ENV, ...PROXY_ENV } : SCRUBBED_ENV,
    detached: true, // its own process group: the time limit kills every descendant
    // Then the start gate, then the workspace's descriptor (bubblewrap binds it and closes it).
    stdio: ['ignore', 'pipe', 'pipe', ...launch.files.map(() => 'pipe' as const), 'pipe', ...(launch.bindFd ? [workspace.fd] : [])],
    ...(launch.identity && process.getuid?.() === 0 ? launch.identity : {}),
  });
  // bubblewrap copies each synthetic file from its descriptor (3, 4, …) before it starts the command.
  launch.files.forEach((content, i) => {
    const pipe = child.stdio[3 + i] as Writable;
    pipe.on('error', () => {}); // bwrap failed before reading: its own error says why
    pipe.end(content);
  });
  const gate = openGate(child, 3 + launch.files.length).then((opened) => {
    if (opened && child.pid !== undefined) request.onStarted?.(child.pid);
  });
  const stdout = new BoundedBuffer(MAX_OUTPUT_BYTES);
  const stderr = new BoundedBuffer(MAX_OUTPUT_BYTES);
  (child.stdout as Readable).on('data', (b: Buffer) => stdout.push(b));
  (child.stderr as Readable).on('data', (b: Buffer) => stderr.push(b));

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
  await gate;
  return {
    stdout: stdout.text(),
    stderr: stderr.text(),
    exitStatus,
    timedOut,
    truncated: stdout.truncated || stderr.truncated,
    usage: cgroup ? cgroup.usage() : null,
    oomKills: cgroup ? cgroup.oomKills() : 0,
    reachedCallMemory: cgroup ? cgroup.reachedCallMemory() : false,
  };
}

interface Launch {
  file: string;
  args: string[];
  /** Contents passed on descriptors 3, 4, … (bwrap --ro-bind-data). */
  files: string[];
  /** The host user to run as (a root worker switches to it before bubblewrap starts). */
  identity?: { uid: number; gid: number };
  /** Whether the workspace's descriptor is passed, after the start gate (bwrap --bind-fd). */
  bindFd?: boolean;
}

/** Inside the sandbox: where the egress proxy's socket, the forwarder and node are bound, and the forwarder's port. */
const EGRESS = {
  dir: '/run/settle',
  socket: '/run/settle/egress.sock',
  node: '/run/settle/node',
  script: '/run/settle/forward.cjs',
  port: 3128,
};
const PROXY_URL = `http://127.0.0.1:${EGRESS.port}`;
const PROXY_ENV = {
  http_proxy: PROXY_URL,
  HTTP_PROXY: PROXY_URL,
  https_proxy: PROXY_URL,
  HTTPS_PROXY: PROXY_URL,
  ALL_PROXY: PROXY_URL,
  all_proxy: PROXY_URL,
};

/**
 * The forwarder: in the sandbox's own network namespace, 127.0.0.1:3128 relays each connection
 * to the proxy's unix socket. It is no boundary (the command can reach the socket itself); the
 * proxy on the worker decides every connection. It says "ready" once it listens.
 */
const FORWARDER = `'use strict';
const net = require('net');
const [socket, port] = process.argv.slice(2);
const server = net.createServer((c) => {
  const u = net.connect(socket);
  c.pipe(u);
  u.pipe(c);
  const end = () => { c.destroy(); u.destroy(); };
  c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
});
server.on('error', (e) => { process.stderr.write(String(e)); process.exit(1); });
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

function bubblewrapLaunch(
  command: string,
  workspace: OpenedWorkspace,
  identity: { uid: number; gid: number },
  limits: SandboxLimits,
  egressSocket: string | null,
): Launch {
  const { uid, gid } = identity;

  const files: string[] = [];
  const data = (content: string, dest: string) => {
    files.push(content);
    return ['--perms', '0644', '--ro-bind-data', String(2 + files.length), dest];
  };
  const etc = Object.entries(syntheticEtc(uid, gid)).flatMap(([name, content]) => data(content, `/etc/${name}`));
  const egress = egressSocket
    ? [...['--ro-bind', process.execPath, EGRESS.node], ...data(FORWARDER, EGRESS.script), ...['--bind', egressSocket, EGRESS.socket]]
    : [];
  // The descriptors: data files from 3, then the start gate, then the workspace.
  const gateFd = 3 + files.length;
  const args = [
    ...READ_ONLY_SYSTEM.filter((p) => fs.existsSync(p)).flatMap((p) => ['--ro-bind', p, p]),
    // /etc: an empty in-memory directory with only the curated files, made read-only below.
    '--size',
    String(1024 * 1024),
    '--tmpfs',
    '/etc',
    ...ETC_FILES.flatMap((f) => ['--ro-bind-try', `/etc/${f}`, `/etc/${f}`]),
    ...etc,
    '--remount-ro',
    '/etc',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(limits.tmpMiB * 1024 * 1024),
    '--tmpfs',
    '/dev/shm',
    // /dev is a writable in-memory file system of its own: read-only, so it cannot fill memory.
    '--remount-ro',
    '/dev',
    '--size',
    String(limits.tmpMiB * 1024 * 1024),
    '--tmpfs',
    '/tmp',
    // The directory that was opened and checked, whatever its path names by now.
    '--bind-fd',
    String(gateFd + 1),
    workspace.path,
    '--chdir',
    workspace.path,
    // The sandbox's root is an in-memory file system too: read-only, so nothing can be written outside /tmp and the workspace.
    ...egress,
    '--remount-ro',
    '/',
    '--unshare-all', // user, PID, IPC, UTS, cgroup and network namespaces: no network, not even loopback of the host
    '--unshare-user',
    '--uid',
    String(uid),
    '--gid',
    String(gid),
    '--disable-userns', // no nested user namespace in which the command would regain capabilities
    '--cap-drop',
    'ALL',
    '--hostname',
    'sandbox',
    '--die-with-parent',
    '--new-session',
    '--',
    '/bin/bash',
    '-c',
    // Limits first (hard and soft), the egress forwarder if any, then the command itself as its own script.
    `${ulimitScript(limits)}; ${egressSocket ? forwarderScript(gateFd) : ''}exec /bin/bash -c "$1"`,
    'settle',
    command,
  ];
  return { file: findBwrap()!, args, files, identity: { uid, gid }, bindFd: true };
}

/**
 * Starts the forwarder (descriptors 3 to the gate's closed, so it holds nothing of bubblewrap's or
 * the gate's) and waits for its "ready"; without it the command does not run (status 125).
 */
function forwarderScript(gateFd: number): string {
  const closeFds = Array.from({ length: gateFd - 2 }, (_, i) => `${3 + i}>&-`).join(' ');
  return (
    `exec 9< <(exec ${EGRESS.node} ${EGRESS.script} ${EGRESS.socket} ${EGRESS.port} </dev/null ${closeFds}) && ` +
    `IFS= read -r -t 60 ready <&9 && [ "$ready" = ready ] && exec 9<&- || ` +
    `{ echo 'settle: the egress forwarder did not start; command not run' >&2; exit 125; }; `
  );
}

/** Why a directory may not be bound writable into a sandbox (a system directory, or one holding the worker's own files); null if it may. */
function forbiddenWorkspace(workspace: string): string | null {
  if (workspace === '/') return 'is the root directory';
  for (const dir of SYSTEM_DIRS) if (isWithin(workspace, dir)) return `lies in the system directory ${dir}`;
  if (isWithin(WORKER_ROOT, workspace)) return `contains the worker's own checkout ${WORKER_ROOT}`;
  // The project's state directory holds the development keys and database passwords.
  if (isWithin(SETTLE_DIR, workspace)) return `contains settle's state directory ${SETTLE_DIR}`;
  return null;
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* group already gone */
  }
}

/** SETTLE_BWRAP (the worker's operator) names bubblewrap; else the usual places. */
function bwrapCandidates(): string[] {
  const configured = process.env.SETTLE_BWRAP;
  return configured ? [configured] : ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];
}

function findBwrap(): string | null {
  return bwrapCandidates().find((p) => fs.existsSync(p)) ?? null;
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
