/**
 * How long a record has stood where it is, for every view (console, `settle status`, `settle
 * records`) alike. An IN_DOUBT record's updated_at is when its effect became unknown (the store
 * keeps a lapsed lease's expiry there, not the time a sweep noticed); an IN_FLIGHT record whose
 * lease lapsed is unknown since that expiry, though nothing has swept it yet.
 */
import type { RecordState } from './records';

export interface AgedRecord {
  state: RecordState;
  leaseUntil: Date | null;
  updatedAt: Date;
}

/** Whether an IN_FLIGHT record's lease has lapsed at `nowMs` (its holder stopped renewing). */
export function leaseLapsed(r: AgedRecord, nowMs: number): boolean {
  return r.state === 'IN_FLIGHT' && r.leaseUntil !== null && r.leaseUntil.getTime() < nowMs;
}

/** When the record's current standing began: the lease's expiry for a lapsed IN_FLIGHT record, else its last transition. */
export function standingSince(r: AgedRecord, nowMs: number): Date {
  return leaseLapsed(r, nowMs) ? r.leaseUntil! : r.updatedAt;
}

/** An age as an operator reads it: `45s`, `12m05s`, `3h07m`, `2d04h`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor(s / 3600) % 24)}h`;
}
