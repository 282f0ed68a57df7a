/**
 * Structured logs: one JSON object per line, one line per event. Every line about a call carries
 * its trajectory id, turn, call id, key and generation, so `grep <key>` or a log query finds the
 * whole story of a call across workers.
 */
import { onCallEvent, type CallEvent } from './events';
import { writeStdoutLine } from './stdout-lines';
import { defaultWorkerIdentity } from './worker-identity';

export type LogWriter = (line: string) => void;

/** One JSON line: time, level, message, then the fields. */
export function jsonLine(level: string, msg: string, fields: Record<string, unknown> = {}): string {
  return JSON.stringify({ ts: new Date().toISOString(), level, msg, ...fields });
}

const LEVEL: Record<CallEvent['event'], string> = {
  claimed: 'info',
  replayed: 'info',
  busy: 'info',
  in_doubt: 'warn',
  released: 'info',
  completed: 'info',
  lease_renewal_failed: 'warn',
  capability_denied: 'warn',
  malformed_call: 'info',
  // An unknown verdict is raised to warn below: the call stays in doubt.
  probed: 'info',
  approval_decided: 'info',
  fenced_write: 'warn',
  // The record store forgot a committed claim: a failover lost acknowledged writes.
  record_written_back: 'error',
  settled: 'info',
};

function levelOf(e: CallEvent): string {
  return e.event === 'probed' && e.verdict === 'unknown' ? 'warn' : LEVEL[e.event];
}

/**
 * Writes every call event as a JSON line, naming the worker process that saw it (`worker`, `pid`:
 * which process to look at, or kill, when a call misbehaves). Returns the unsubscribe function.
 */
export function logCallEvents(write: LogWriter = writeStdoutLine, worker = defaultWorkerIdentity()): () => void {
  return onCallEvent((e) => {
    const { event, ...fields } = e;
    write(jsonLine(levelOf(e), `call ${event}`, { event, ...fields, worker, pid: process.pid }));
  });
}

const shared = new Map<LogWriter, Map<string, { users: number; stop: () => void }>>();

/**
 * logCallEvents shared by every user of one writer and worker name in a process (two plugin
 * workers of one process print each event once). Returns this user's release.
 */
export function shareCallEventLog(write: LogWriter, worker: string): () => void {
  const byWorker = shared.get(write) ?? shared.set(write, new Map()).get(write)!;
  const entry = byWorker.get(worker) ?? { users: 0, stop: logCallEvents(write, worker) };
  entry.users++;
  byWorker.set(worker, entry);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--entry.users === 0) {
      entry.stop();
      byWorker.delete(worker);
    }
  };
}
