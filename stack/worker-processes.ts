/**
 * `settle dev --workers N`: N settle workers, each a process of its own (workers/worker.ts), so a
 * kill drill is a plain `kill -9 PID`. Each leads a process group of its own and is registered
 * with the reaper (reaper.ts): whatever ends the process that started them — Ctrl-C, SIGTERM,
 * SIGKILL, a crash — ends them too, and no worker outlives `settle dev`.
 *
 * Supervised: a worker that exits while `settle dev` is not stopping is started again in its slot
 * (same slot, same environment: its metrics port stays), after a backoff that grows while it keeps
 * dying young, so a dead worker does not leave a quiet stack behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { reapOnExit } from './reaper';
import { restartDelayMs } from './restart-backoff';

/** How long stopping waits for workers to finish their calls in flight before it gives up on them. */
export const WORKER_DRAIN_MS = 30_000;

/** What happened to a worker process, for settle dev's log. */
export type WorkerEvent =
  | {
      kind: 'exited';
      slot: number;
      pid: number;
      how: string;
      /** Worker processes still running (the one that ended not counted). */
      running: number;
      count: number;
      restartInMs: number;
    }
  | { kind: 'restarted'; slot: number; pid: number; previousPid: number };

export interface WorkerProcesses {
  /** The pids of the workers now running (one per slot; a restarted worker has a new pid). */
  readonly pids: number[];
  /** SIGTERM to every worker still running (they drain), SIGKILL after `graceMs`; resolves once all have exited. */
  stop(graceMs?: number): Promise<void>;
}

/** The worker's entry: its TypeScript source through tsx in a checkout, the compiled file in the package. */
function workerCommand(): string[] {
  const source = fileURLToPath(new URL('../workers/worker.ts', import.meta.url));
  if (fs.existsSync(source)) return ['--import', 'tsx', source];
  return [fileURLToPath(new URL('../workers/worker.js', import.meta.url))];
}

interface Slot {
  child: ChildProcess | null;
  exited: Promise<void>;
  startedAt: number;
  /** Consecutive deaths soon after start: the backoff grows with them. */
  failures: number;
  restartTimer: NodeJS.Timeout | null;
}

export function startWorkerProcesses(
  count: number,
  /** The environment of the worker in each slot (0-based), added to this process's. */
  env: (slot: number) => NodeJS.ProcessEnv,
  onEvent: (event: WorkerEvent) => void = () => {},
): WorkerProcesses {
  let stopping = false;
  const slots: Slot[] = [];

  const launch = (index: number): ChildProcess => {
    const child = spawn(process.execPath, workerCommand(), {
      env: { ...process.env, ...env(index) },
      // Their JSON lines on this terminal; a group of their own, so the reaper can end each whole.
      stdio: ['ignore', 'inherit', 'inherit'],
      detached: true,
    });
    const forget = reapOnExit({ group: child.pid!, signal: 'SIGTERM' });
    const slot = slots[index]!;
    slot.child = child;
    slot.startedAt = Date.now();
    slot.exited = new Promise<void>((resolve) =>
      child.once('exit', (code, sig) => {
        forget();
        slot.child = null;
        resolve();
        if (stopping) return;
        // A worker that ran a good while before dying starts again at once-ish; one that keeps dying waits longer each time.
        slot.failures = Date.now() - slot.startedAt >= STABLE_MS ? 0 : slot.failures + 1;
        const delay = restartDelayMs(slot.failures);
        onEvent({
          kind: 'exited',
          slot: index,
          pid: child.pid!,
          how: sig ? `signal ${sig}` : `exit ${code}`,
          running: slots.filter((s) => s.child !== null).length,
          count,
          restartInMs: delay,
        });
        slot.restartTimer = setTimeout(() => {
          slot.restartTimer = null;
          if (stopping) return;
          const next = launch(index);
          onEvent({ kind: 'restarted', slot: index, pid: next.pid!, previousPid: child.pid! });
        }, delay);
      }),
    );
    return child;
  };

  for (let i = 0; i < count; i++) {
    slots.push({ child: null, exited: Promise.resolve(), startedAt: 0, failures: 0, restartTimer: null });
    launch(i);
  }
  return {
    get pids() {
      return slots.flatMap((s) => (s.child ? [s.child.pid!] : []));
    },
    stop: async (graceMs = WORKER_DRAIN_MS) => {
      stopping = true;
      for (const s of slots) if (s.restartTimer) clearTimeout(s.restartTimer);
      const running = slots.filter((s) => s.child !== null);
      for (const s of running) signal(s.child!.pid!, 'SIGTERM');
      const timer = setTimeout(() => running.forEach((s) => s.child && signal(s.child.pid!, 'SIGKILL')), graceMs);
      await Promise.all(running.map((s) => s.exited));
      clearTimeout(timer);
    },
  };
}

/** A worker that ran this long before it died is not crash-looping: its next restart waits the least. */
const STABLE_MS = 60_000;

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // The group is gone already.
  }
}
