/**
 * A cgroup per shell call (docs/sandbox.md#resource-limits): a total memory bound (tmpfs pages
 * the call writes included) and a total process bound for everything the call runs, and its
 * totals — CPU time, peak memory, peak processes — recorded with its observation. The cgroup is
 * removed when the call ends, after killing whatever is still in it.
 *
 * Every call's group lies in one group of its worker (`settle/worker-<pid>-<random>`), whose
 * memory bound holds all the worker's calls together: per-call bounds alone let N calls hold N
 * times as much.
 *
 * Supported: the cgroup v1 hierarchies `memory`, `pids` and `cpuacct` under SETTLE_CGROUP_ROOT
 * (default /sys/fs/cgroup), writable by the worker. Otherwise (cgroup v2 only, read-only, absent)
 * the call keeps its per-process limits only (sandbox-limits.ts), and the worker says so once,
 * loudly.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ResourceUsage } from '../../core/observation';

export const CGROUP_ROOT_VARIABLE = 'SETTLE_CGROUP_ROOT';
const CONTROLLERS = ['memory', 'pids', 'cpuacct'] as const;
type Controller = (typeof CONTROLLERS)[number];

/** A call's totals, as recorded in its observation. */
export type CallUsage = ResourceUsage;

export interface CallCgroup {
  /** `cgroup.procs` files a process writes its pid to, to join (before it starts anything). */
  procsFiles: string[];
  usage(): CallUsage;
  /** Processes of this call the kernel killed because the call, or the worker's calls together, reached their memory total. */
  oomKills(): number;
  /** Whether the call reached its own memory total (else a kill came from the worker's). */
  reachedCallMemory(): boolean;
  /** Kills what is left in it and removes it. */
  remove(): Promise<void>;
}

type Support = { kind: 'v1'; dirs: Record<Controller, string> } | { kind: 'none'; why: string };
let support: Support | undefined;

/** This worker process's group, in each controller's `settle` group; it holds the groups of its calls. */
const WORKER_GROUP = `worker-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
/** The memory bound last written to the worker's group (rewritten when the setting changes, or the group was recreated). */
let workerMemoryBytes: number | undefined;

/** Forgets what was detected (tests change SETTLE_CGROUP_ROOT). */
export function resetCgroupSupport(): void {
  support = undefined;
  workerMemoryBytes = undefined;
}

/** Whether per-call cgroups are available here; warns once (per detection) when they are not. */
export function cgroupSupport(warn: (line: string) => void = (l) => console.warn(l)): Support {
  if (support) return support;
  support = detect(process.env[CGROUP_ROOT_VARIABLE] || '/sys/fs/cgroup');
  if (support.kind === 'none')
    warn(
      `settle sandbox: WARNING: no per-call cgroup (${support.why}); shell calls are bounded per process only ` +
        `(SETTLE_SANDBOX_* rlimits), not in total, and their CPU and memory totals are not recorded`,
    );
  return support;
}

function detect(root: string): Support {
  if (fs.existsSync(path.join(root, 'cgroup.controllers')))
    return { kind: 'none', why: `${root} is cgroup v2, which settle does not manage yet` };
  const dirs = {} as Record<Controller, string>;
  for (const c of CONTROLLERS) {
    const dir = path.join(root, c, 'settle');
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.accessSync(path.join(dir, 'cgroup.procs'), fs.constants.W_OK);
    } catch (err) {
      return {
        kind: 'none',
        why: `the cgroup v1 ${c} hierarchy under ${root} is not writable (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      };
    }
    dirs[c] = dir;
  }
  for (const dir of Object.values(dirs)) sweepStale(dir);
  return { kind: 'v1', dirs };
}

/** The largest single charge (a transparent huge page): a refused one leaves usage this far under the bound. */
const CHARGE_SLACK_BYTES = 4 * 1024 * 1024;

/** A group stays empty for milliseconds between its creation and its call joining it; older and empty is stale. */
const STALE_AFTER_MS = 60_000;

/**
 * Removes the empty groups of calls whose worker was killed before it could remove them, and the
 * groups of workers that are gone. rmdir refuses a group that still has processes or groups in
 * it, so a running call's group is never touched; a live worker whose group was removed (another
 * PID namespace, where its pid looks gone) makes it again at its next call.
 */
function sweepStale(dir: string): void {
  for (const name of entriesIfPresent(dir)) {
    const group = path.join(dir, name);
    if (name.startsWith('worker-')) {
      sweepStale(group);
      const pid = Number(name.split('-')[1]);
      if (name !== WORKER_GROUP && !alive(pid)) removeIfStale(group);
    } else if (name.startsWith('call-')) removeIfStale(group);
  }
}

/**
 * A directory's entries, none once it is gone: workers that start together sweep the same groups,
 * and one may remove a dead worker's group while another reads it.
 */
function entriesIfPresent(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

function removeIfStale(group: string): void {
  try {
    if (Date.now() - fs.statSync(group).mtimeMs > STALE_AFTER_MS) fs.rmdirSync(group);
  } catch {
    /* in use (EBUSY, ENOTEMPTY) or already gone */
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * This worker's group in each controller, made if missing, with its memory bound: all its calls'
 * memory together (tmpfs pages included), past which the kernel kills processes of its calls.
 */
function workerGroup(s: { dirs: Record<Controller, string> }, memoryMiB: number): Record<Controller, string> {
  const dirs = {} as Record<Controller, string>;
  let made = false;
  for (const c of CONTROLLERS) {
    dirs[c] = path.join(s.dirs[c], WORKER_GROUP);
    if (fs.mkdirSync(dirs[c], { recursive: true }) !== undefined) made = true;
  }
  const bytes = memoryMiB * 1024 * 1024;
  if (made || workerMemoryBytes !== bytes) {
    setMemoryLimit(dirs.memory, bytes);
    workerMemoryBytes = bytes;
  }
  return dirs;
}

/** memory.limit_in_bytes, and the same for memory and swap where swap is accounted (never below the memory bound: order matters). */
function setMemoryLimit(dir: string, bytes: number): void {
  const memory = path.join(dir, 'memory.limit_in_bytes');
  const swap = path.join(dir, 'memory.memsw.limit_in_bytes');
  const hasSwap = fs.existsSync(swap);
  const raising = bytes > Number(fs.readFileSync(memory, 'utf8'));
  if (hasSwap && raising) fs.writeFileSync(swap, String(bytes));
  fs.writeFileSync(memory, String(bytes));
  if (hasSwap && !raising) fs.writeFileSync(swap, String(bytes));
}

/**
 * A fresh cgroup for one call with the call's totals as limits; null when unsupported. `owner`:
 * the sandbox's host user, which joins it (a root worker spawns as that user).
 */
export function createCallCgroup(
  limits: { processes: number; callMemoryMiB: number; workerMemoryMiB: number },
  owner?: { uid: number; gid: number },
): CallCgroup | null {
  const s = cgroupSupport();
  if (s.kind !== 'v1') return null;
  const worker = workerGroup(s, limits.workerMemoryMiB);
  const name = `call-${crypto.randomUUID()}`;
  const dir = (c: Controller) => path.join(worker[c], name);
  const made: string[] = [];
  try {
    for (const c of CONTROLLERS) {
      fs.mkdirSync(dir(c));
      made.push(dir(c));
    }
    setMemoryLimit(dir('memory'), limits.callMemoryMiB * 1024 * 1024); // swap counted too, where accounted
    fs.writeFileSync(path.join(dir('pids'), 'pids.max'), String(limits.processes));
    if (owner && process.getuid?.() === 0)
      for (const c of CONTROLLERS) fs.chownSync(path.join(dir(c), 'cgroup.procs'), owner.uid, owner.gid);
  } catch (err) {
    for (const d of made.reverse()) fs.rmSync(d, { recursive: false, force: true });
    throw err;
  }
  const read = (c: Controller, file: string): string | null => {
    try {
      return fs.readFileSync(path.join(dir(c), file), 'utf8').trim();
    } catch {
      return null;
    }
  };
  return {
    procsFiles: CONTROLLERS.map((c) => path.join(dir(c), 'cgroup.procs')),
    usage: () => {
      const peak = read('pids', 'pids.peak');
      return {
        cpu_ms: Math.round(Number(read('cpuacct', 'cpuacct.usage') ?? 0) / 1e6),
        peak_memory_bytes: Number(read('memory', 'memory.max_usage_in_bytes') ?? 0),
        peak_processes: peak === null ? null : Number(peak),
      };
    },
    oomKills: () => Number(/^oom_kill (\d+)$/m.exec(read('memory', 'memory.oom_control') ?? '')?.[1] ?? 0),
    // The call's peak at its own bound (less a huge page the refused charge may have asked for);
    // failcnt would say it directly, but the kernel does not count it where swap is accounted.
    reachedCallMemory: () =>
      Number(read('memory', 'memory.max_usage_in_bytes') ?? 0) >= limits.callMemoryMiB * 1024 * 1024 - CHARGE_SLACK_BYTES,
    remove: async () => {
      for (let attempt = 0; ; attempt++) {
        for (const pid of (read('pids', 'cgroup.procs') ?? '').split('\n').filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            /* already gone */
          }
        }
        try {
          for (const c of CONTROLLERS) if (fs.existsSync(dir(c))) fs.rmdirSync(dir(c));
          return;
        } catch (err) {
          // EBUSY while killed processes are still exiting; give up quietly after a while (the
          // empty group is harmless and named by call, never reused).
          if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || attempt >= 50) return;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    },
  };
}

/**
 * Wraps a launch so that its first process joins the cgroup before it execs anything: every
 * process of the call is created inside. Exit 125 (nothing ran) if it cannot join.
 */
export function joinCgroupLaunch(procsFiles: string[], file: string, args: string[]): { file: string; args: string[] } {
  const script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"';
  return { file: '/bin/sh', args: ['-c', script, 'settle-cgroup', String(procsFiles.length), ...procsFiles, file, ...args] };
}
