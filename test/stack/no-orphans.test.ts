/**
 * The stack never outlives the process that started it: Ctrl-C or SIGTERM to that process's
 * group (how a terminal or CI stops `npm test`, `npm start`, `settle dev`) and SIGKILL of that
 * process alone both take Temporal and PostgreSQL down with it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-orphans-'));
fs.chmodSync(scratch, 0o755); // the embedded server runs as the postgres user when we are root
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

interface Started {
  owner: number;
  temporalPid: number;
  postmasterPid: number;
}

/** A process in a group of its own that starts the stack, says what it started, and waits. */
async function startOwner(name: string): Promise<Started> {
  const dataDir = path.join(scratch, name);
  const code = `
    import fs from 'node:fs';
    import { startStack } from './stack/index.ts';
    const stack = await startStack({ postgres: { dataDir: ${JSON.stringify(dataDir)}, ephemeral: true } });
    const postmasterPid = Number(fs.readFileSync(${JSON.stringify(path.join(dataDir, 'postmaster.pid'))}, 'utf8').split('\\n')[0]);
    console.log(JSON.stringify({ temporalPid: stack.temporal.pid, postmasterPid }));
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: process.cwd(),
    detached: true, // its own process group, as a shell gives a foreground job
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (c) => reject(new Error(`the stack's owner exited (${c}) before starting it: ${err.slice(-2000)}`)));
  });
  const { temporalPid, postmasterPid } = JSON.parse(line) as { temporalPid: number; postmasterPid: number };
  expect(temporalPid).toBeGreaterThan(0);
  expect(postmasterPid).toBeGreaterThan(0);
  return { owner: child.pid!, temporalPid, postmasterPid };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until none of `pids` runs, or the generous bound passes; returns those still running. */
async function survivors(pids: number[], boundMs = 40_000): Promise<number[]> {
  const deadline = Date.now() + boundMs;
  while (Date.now() < deadline && pids.some(alive)) await new Promise((r) => setTimeout(r, 200));
  return pids.filter(alive);
}

function cleanUp(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

describe('the stack dies with its owner', () => {
  it.each([
    ['SIGTERM to the process group (CI or a terminal stopping the job)', (s: Started) => process.kill(-s.owner, 'SIGTERM')],
    ['SIGINT to the process group (Ctrl-C)', (s: Started) => process.kill(-s.owner, 'SIGINT')],
    ['SIGKILL of the owner alone', (s: Started) => process.kill(s.owner, 'SIGKILL')],
  ])(
    '%s leaves neither Temporal nor PostgreSQL running',
    async (_how, stop) => {
      const started = await startOwner(`pg-${Math.random().toString(36).slice(2, 8)}`);
      const servers = [started.temporalPid, started.postmasterPid];
      expect(servers.every(alive)).toBe(true);
      stop(started);
      const left = await survivors([started.owner, ...servers]);
      cleanUp(left);
      expect(left).toEqual([]);
    },
    120_000,
  );
});
