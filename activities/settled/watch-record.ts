/**
 * While a call waits for an operator, its record may be settled without the trajectory hearing of
 * it: `settle resolve` writes the record directly when the trajectory is not (yet) waiting for the
 * call — e.g. between a probe's answer and the wait — and a late completion (a paused worker that
 * resumes) settles it too. This watch reads the record until it leaves IN_DOUBT at the generation
 * in doubt (or, asked to, IN_FLIGHT), and returns what it found.
 *
 * One long activity rather than workflow timers: heartbeats and the reads between them add no
 * history events (a timer-driven re-check would add about ten per check, forever), and a watch
 * that dies with its worker is retried elsewhere without any either.
 */
import type { RecordState } from '../../core/records';
import type { EndpointStore } from '../store/endpoint-store';

export interface WatchRecordInput {
  key: string;
  /** The generation in doubt: a record at another generation (or settled) ends the watch. */
  generation: number;
  /**
   * The state watched (default IN_DOUBT): the watch ends once the record is no longer in it at
   * `generation`. IN_FLIGHT: a call refused here whose earlier attempt holds the key, until that
   * holder finishes or its lapsed lease is swept IN_DOUBT.
   */
  state?: 'IN_FLIGHT' | 'IN_DOUBT';
}

export interface WatchedRecord {
  state: RecordState;
  generation: number;
  /** Who settled it (e.g. `operator:frank`); null for a worker's late completion. */
  settledBy: string | null;
}

export interface WatchOptions {
  /** First pause between two reads; doubles up to `maxIntervalMs`. */
  initialIntervalMs: number;
  maxIntervalMs: number;
  /** Tells Temporal the watch is alive; called between reads, at least every `heartbeatEveryMs`. */
  heartbeat: () => void;
  heartbeatEveryMs: number;
  /** Resolves after `ms`, rejects when the activity is cancelled (the verdict came through the update). */
  sleep: (ms: number) => Promise<void>;
  /** A read failed (e.g. the database is away): the watch carries on. */
  onReadError?: (err: Error) => void;
}

/** Defaults: a record settled just before the wait is seen at once; later ones within a minute. */
export const WATCH_DEFAULTS = { initialIntervalMs: 1_000, maxIntervalMs: 60_000, heartbeatEveryMs: 20_000 } as const;

export async function watchRecord(store: EndpointStore, input: WatchRecordInput, options: WatchOptions): Promise<WatchedRecord> {
  let interval = options.initialIntervalMs;
  for (;;) {
    const found = await read(store, input, options);
    if (found) return found;
    // A missing record (purged by mistake) is not a settlement: keep waiting, fail closed.
    for (let waited = 0; waited < interval; waited += options.heartbeatEveryMs) {
      options.heartbeat();
      await options.sleep(Math.min(options.heartbeatEveryMs, interval - waited));
    }
    interval = Math.min(interval * 2, options.maxIntervalMs);
  }
}

async function read(store: EndpointStore, input: WatchRecordInput, options: WatchOptions): Promise<WatchedRecord | null> {
  try {
    const record = await store.get(input.key);
    if (!record || (record.state === (input.state ?? 'IN_DOUBT') && record.generation === input.generation)) return null;
    return { state: record.state, generation: record.generation, settledBy: record.settledBy ?? null };
  } catch (err) {
    options.onReadError?.(err as Error);
    return null;
  }
}
