/**
 * Takes the stack's servers down when the process that started them ends in any way: a signal to
 * its process group (Ctrl-C or SIGTERM of `npm test`, `npm start`, `settle dev`), SIGKILL, a
 * crash. stop() and an `exit` handler cover an orderly end only, and the Temporal dev server runs
 * in a process group of its own, so a signal sent to ours never reaches it.
 *
 * A small watcher process, in a session of its own, holds a pipe from this process. When the pipe
 * closes (this process is gone, however it went), the watcher signals every server still
 * registered, waits, then kills what is left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';

export type ReapTarget =
  /** A process group (a server started `detached`, leading its own group). */
  | { group: number; signal: NodeJS.Signals }
  /** The process named on the first line of a pid file when the watcher acts (PostgreSQL's postmaster.pid). */
  | { pidFile: string; signal: NodeJS.Signals };

/** Grace between the polite signal and SIGKILL. */
const GRACE_MS = 10_000;

const WATCHER = `'use strict';
const fs = require('fs');
const targets = new Map();
let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf('\\n')) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    const space = line.indexOf(' ');
    const [op, rest] = [line.slice(0, space), line.slice(space + 1)];
    if (op === 'add') { const t = JSON.parse(rest); targets.set(t.id, t); }
    if (op === 'del') targets.delete(rest);
  }
});
const pidOf = (t) => {
  if (t.group) return -t.group;
  try { return Number(fs.readFileSync(t.pidFile, 'utf8').split('\\n')[0]) || null; } catch { return null; }
};
const send = (pid, signal) => { try { process.kill(pid, signal); return true; } catch { return false; } };
process.stdin.on('end', () => {
  const pids = [...targets.values()].map((t) => [pidOf(t), t.signal]).filter(([pid]) => pid);
  for (const [pid, signal] of pids) send(pid, signal);
  const deadline = Date.now() + ${GRACE_MS};
  const check = setInterval(() => {
    const alive = pids.filter(([pid]) => send(pid, 0));
    if (alive.length === 0 || Date.now() > deadline) {
      for (const [pid] of alive) send(pid, 'SIGKILL');
      clearInterval(check);
    }
  }, 100);
});
`;

let watcher: { child: ChildProcess; stdin: Writable } | undefined;
let nextId = 0;

function startWatcher(): { child: ChildProcess; stdin: Writable } {
  const child = spawn(process.execPath, ['-e', WATCHER], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  const stdin = child.stdin;
  stdin.on('error', () => {}); // the watcher gone first: nothing left to tell it
  (stdin as unknown as { unref(): void }).unref(); // the pipe must not keep this process alive
  return { child, stdin };
}

/**
 * Registers a server to be taken down if this process ends without stopping it; returns the
 * function that forgets it again (call it once the server was stopped the orderly way).
 */
export function reapOnExit(target: ReapTarget): () => void {
  watcher ??= startWatcher();
  const id = String(nextId++);
  const { stdin } = watcher;
  stdin.write(`add ${JSON.stringify({ id, ...target })}\n`);
  return () => {
    if (!stdin.destroyed) stdin.write(`del ${id}\n`);
  };
}
