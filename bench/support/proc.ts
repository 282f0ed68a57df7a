/**
 * Process accounting from /proc (Linux): CPU time and resident memory of a process or a whole
 * process tree, for the benchmarks' per-process cost figures.
 */
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

interface Stat {
  pid: number;
  ppid: number;
  /** utime + stime of the process itself, ms. */
  ownMs: number;
  /** cutime + cstime: children it has waited for, ms. */
  reapedMs: number;
}

function readStat(pid: number): Stat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const n = (i: number) => Number(fields[i - 3]);
  const ms = (t: number) => (t * 1000) / TICKS_PER_SECOND;
  return { pid, ppid: n(4), ownMs: ms(n(14) + n(15)), reapedMs: ms(n(16) + n(17)) };
}

function allStats(): Stat[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readStat(Number(d)))
    .filter((s): s is Stat => s !== null);
}

/**
 * CPU time (ms) a process tree has used: the root's own and reaped children's time, plus the
 * own time of descendants still alive (Postgres backends live as long as their connections).
 */
export function treeCpuMs(root: number): number {
  const stats = allStats();
  const byParent = new Map<number, Stat[]>();
  for (const s of stats) byParent.set(s.ppid, [...(byParent.get(s.ppid) ?? []), s]);
  const rootStat = stats.find((s) => s.pid === root);
  if (!rootStat) throw new Error(`process ${root} is gone`);
  let total = rootStat.ownMs + rootStat.reapedMs;
  const walk = (pid: number) => {
    for (const child of byParent.get(pid) ?? []) {
      total += child.ownMs + child.reapedMs;
      walk(child.pid);
    }
  };
  walk(root);
  return total;
}

/** Resident set size now, bytes; 0 for a process that is gone (the bench stack says why it went). */
export function rssBytes(pid: number): number {
  let status: string;
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return 0;
  }
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

/** The postmaster's pid from its data directory. */
export function postmasterPid(dataDir: string): number {
  return Number(fs.readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
}

export function cpuModel(): string {
  const m = /model name\s*:\s*(.+)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
  return m ? m[1]!.trim() : 'unknown';
}
