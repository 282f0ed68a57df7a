/**
 * `settle dev --workers N`: N settle workers, each a process of its own (workers/worker.ts), so a
 * kill drill is a plain `kill -9 PID`. Each leads a process group of its own and is registered
 * with the reaper (reaper.ts): whatever ends the process that started them — Ctrl-C, SIGTERM,
 * SIGKILL, a crash — ends them too, and no worker outlives `settle dev`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { reapOnExit } from './reaper';

/** How long stopping waits for workers to finish their calls in flight before it gives up on them. */
export const WORKER_DRAIN_MS = 30_000;

export interface WorkerProcesses {
  pids: number[];
  /** SIGTERM to every worker still running (they drain), SIGKILL after `graceMs`; resolves once all have exited. */
  stop(graceMs?: number): Promise<void>;
}

/** The worker's entry: its TypeScript source through tsx in a checkout, the compiled file in the package. */
function workerCommand(): string[] {
  const source = fileURLToPath(new URL('../workers/worker.ts', import.meta.url));
  if (fs.existsSync(source)) return ['--import', 'tsx', source];
  return [fileURLToPath(new URL('../workers/worker.js', import.meta.url))];
}

export function startWorkerProcesses(
  count: number,
  env: NodeJS.ProcessEnv,
  onExit: (pid: number, how: string) => void = () => {},
): WorkerProcesses {
  const children: { child: ChildProcess; exited: Promise<void>; forget: () => void }[] = [];
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, workerCommand(), {
      env: { ...process.env, ...env },
      // Their JSON lines on this terminal; a group of their own, so the reaper can end each whole.
      stdio: ['ignore', 'inherit', 'inherit'],
      detached: true,
    });
    const forget = reapOnExit({ group: child.pid!, signal: 'SIGTERM' });
    const exited = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        forget();
        onExit(child.pid!, signal ? `signal ${signal}` : `exit ${code}`);
        resolve();
      }),
    );
    children.push({ child, exited, forget });
  }
  return {
    pids: children.map((c) => c.child.pid!),
    stop: async (graceMs = WORKER_DRAIN_MS) => {
      const running = children.filter((c) => c.child.exitCode === null && c.child.signalCode === null);
      for (const c of running) signal(c.child.pid!, 'SIGTERM');
      const timer = setTimeout(() => running.forEach((c) => signal(c.child.pid!, 'SIGKILL')), graceMs);
      await Promise.all(running.map((c) => c.exited));
      clearTimeout(timer);
    },
  };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // The group is gone already.
  }
}
