/**
 * Several "hosts" on one machine (docs/deploying.md#workers-on-several-hosts): a host is a mount
 * namespace of its own (`unshare -m`, private propagation) in which a host-specific directory —
 * its "disk" — is bound at a path every host shares. Workers on two hosts see the same path and
 * different files, as workers on two machines would; the harness, outside every namespace, reads
 * each disk where it really is. Needs root (CAP_SYS_ADMIN) for the namespace and the bind mount.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

/** Where a host's disk is bound inside its namespace. */
export interface HostMount {
  /** The host's own directory (as the harness sees it). */
  disk: string;
  /** The path it is bound at, the same on every host. */
  at: string;
}

/** `file args…` run in a new mount namespace where `mount.disk` is bound at `mount.at`. */
export function inHost(mount: HostMount, file: string, args: string[]): { file: string; args: string[] } {
  return {
    file: 'unshare',
    // unshare execs its command (no fork) and so does sh: the process keeps its pid throughout.
    args: [
      '-m',
      '--propagation',
      'private',
      'sh',
      '-c',
      'mount --bind "$1" "$2" && shift 2 && exec "$@"',
      'settle-host',
      mount.disk,
      mount.at,
      file,
      ...args,
    ],
  };
}

/** Throws a one-line error when this process cannot make a host (no root, no unshare). */
export function requireHosts(): void {
  const probe = spawnSync('unshare', ['-m', 'true']);
  if (probe.status !== 0) {
    const why = probe.error?.message ?? (probe.stderr?.toString().trim() || `exit ${probe.status}`);
    throw new Error(`hosts: unshare -m failed (${why}): several hosts on one machine need root (CAP_SYS_ADMIN)`);
  }
}

/** Every descendant of `pid` now, from /proc (children before grandchildren). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The fourth field, after the parenthesised command name (which may contain spaces).
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited while listed
    }
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    for (const [child, ppid] of parent) {
      if (ppid === p) {
        out.push(child);
        queue.push(child);
      }
    }
  }
  return out;
}

/**
 * A host's death: SIGKILL, all at once, to each of its worker processes' process groups (each
 * worker leads its own) and to every process they started (sandboxed commands lead groups of
 * their own) — the whole machine losing power, as far as its processes go.
 */
export function killHostProcesses(workerPids: number[]): void {
  const everyone = new Set<number>();
  for (const pid of workerPids) for (const d of descendants(pid)) everyone.add(d);
  for (const pid of workerPids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const pid of everyone) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The host id a settle worker logged in its polling line (`settle worker: polling … "host":"…"`), if it has. */
export function hostIdIn(output: string): string | null {
  return /settle worker: polling[^\n]*?"host":"([^"]+)"/.exec(output)?.[1] ?? null;
}
