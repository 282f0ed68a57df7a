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

/**
 * Runs `script` (a TypeScript worker entry, through tsx) with the test stack's Temporal and
 * Postgres, plus `env`. `consumer`: run it as a project outside this repository runs it instead —
 * plain `node script` in `consumer.cwd`, with only `consumer.env` (no tsx, nothing of the test run's).
 */
export function startWorkerProcess(
  script: string,
  env: NodeJS.ProcessEnv,
  consumer?: { cwd: string; env: NodeJS.ProcessEnv },
): WorkerProcess {
  const stack = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
  const child = spawn(process.execPath, consumer ? [script] : ['--import', 'tsx', script], {
    env: { ...(consumer ? consumer.env : process.env), ...stack, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(consumer ? { cwd: consumer.cwd } : {}),
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
