/**
 * A cgroup per shell call (docs/sandbox.md#resource-limits): a total memory bound (tmpfs pages
 * the call writes included) and a total process bound for everything the call runs, and its
 * totals — CPU time, peak memory, peak processes — recorded with its observation. The cgroup is
 * removed when the call ends, after killing whatever is still in it.
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
  /** Processes the kernel killed because the call reached its memory total. */
  oomKills(): number;
  /** Kills what is left in it and removes it. */
  remove(): Promise<void>;
}

type Support = { kind: 'v1'; dirs: Record<Controller, string> } | { kind: 'none'; why: string };
let support: Support | undefined;

/** Forgets what was detected (tests change SETTLE_CGROUP_ROOT). */
export function resetCgroupSupport(): void {
  support = undefined;
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

/** A group stays empty for milliseconds between its creation and its call joining it; older and empty is stale. */
const STALE_AFTER_MS = 60_000;

/**
 * Removes the empty groups of calls whose worker was killed before it could remove them. rmdir
 * refuses a group that still has processes, so a running call's group is never touched.
 */
function sweepStale(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    if (!name.startsWith('call-')) continue;
    const group = path.join(dir, name);
    try {
      if (Date.now() - fs.statSync(group).mtimeMs > STALE_AFTER_MS) fs.rmdirSync(group);
    } catch {
      /* in use (EBUSY) or already gone */
    }
  }
}

/**
 * A fresh cgroup for one call with the call's totals as limits; null when unsupported. `owner`:
 * the sandbox's host user, which joins it (a root worker spawns as that user).
 */
export function createCallCgroup(
  limits: { processes: number; callMemoryMiB: number },
  owner?: { uid: number; gid: number },
): CallCgroup | null {
  const s = cgroupSupport();
  if (s.kind !== 'v1') return null;
  const name = `call-${crypto.randomUUID()}`;
  const dir = (c: Controller) => path.join(s.dirs[c], name);
  const made: string[] = [];
  try {
    for (const c of CONTROLLERS) {
      fs.mkdirSync(dir(c));
      made.push(dir(c));
    }
    const bytes = String(limits.callMemoryMiB * 1024 * 1024);
    fs.writeFileSync(path.join(dir('memory'), 'memory.limit_in_bytes'), bytes);
    try {
      fs.writeFileSync(path.join(dir('memory'), 'memory.memsw.limit_in_bytes'), bytes); // swap counted too, where accounted
    } catch {
      /* no swap accounting: memory alone is bounded */
    }
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
