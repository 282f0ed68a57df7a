/**
 * A worker in a process of its own, for tests that kill it: its output is collected, its exit
 * (signal or code) is a promise, and every one started is SIGKILLed by `killWorkerProcesses`
 * (call it in afterAll) if the test left it running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { inject } from 'vitest';

export interface WorkerProcess {
  child: ChildProcess;
  exited: Promise<NodeJS.Signals | number | null>;
  output: () => string;
}

const started: ChildProcess[] = [];

/** Runs `script` (a TypeScript worker entry) with the test stack's Temporal and Postgres, plus `env`. */
export function startWorkerProcess(script: string, env: NodeJS.ProcessEnv): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((r) => child.once('exit', (code, signal) => r(signal ?? code)));
  return { child, exited, output: () => out };
}

export function killWorkerProcesses(): void {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
