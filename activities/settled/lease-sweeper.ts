/**
 * The lease sweeper: every record whose holder is gone becomes IN_DOUBT, and visible, within
 * seconds of its lease lapsing — whether or not anything claims its key again (a call whose retry
 * a worker refused, a trajectory terminated mid-call). Without it only a new claim turns a lapsed
 * lease IN_DOUBT, and a record nobody retries stays IN_FLIGHT, unsettleable and uncounted.
 *
 * Every worker runs one (createSettleWorker); anything else that runs settle's activities can
 * start one too. Sweepers of many workers share the work: each record is swept by exactly one
 * (EndpointStore.sweepLapsedLeases, `FOR UPDATE SKIP LOCKED`).
 */
import type { EndpointStore } from '../store/endpoint-store';
import { emitCallEvent } from '../observability/events';
import { asError } from '../../core/errors';

export interface LeaseSweeperOptions {
  /** Recorded on each sweep's event (`detail.sweeper`): the worker's identity. */
  identity: string;
  /** Pause between sweeps. */
  intervalMs?: number;
  /**
   * Sweep only leases that lapsed at least this long ago: a holder's retried attempt usually
   * claims first (and probes at once); the sweeper is for the records nothing claims again.
   */
  graceMs?: number;
  /** Records per statement; a full batch is followed by another at once. */
  batch?: number;
  /**
   * A sweep failed (e.g. the database is away): the sweeper carries on at its next period. Called
   * for the first failure after a success only, so an outage is reported once, not every period.
   */
  onError?: (err: Error) => void;
}

/** About a lease (settled-call.ts DEFAULT_LEASE_MS is 3 s): a dead holder's record is IN_DOUBT within ~lease + 4 s. */
export const SWEEP_DEFAULTS = { intervalMs: 2_000, graceMs: 2_000, batch: 100 } as const;

export class LeaseSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;
  private failing = false;
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly batch: number;

  constructor(
    private readonly store: EndpointStore,
    private readonly options: LeaseSweeperOptions,
  ) {
    this.intervalMs = positive(options.intervalMs ?? SWEEP_DEFAULTS.intervalMs, 'intervalMs');
    this.graceMs = nonNegative(options.graceMs ?? SWEEP_DEFAULTS.graceMs, 'graceMs');
    this.batch = positive(options.batch ?? SWEEP_DEFAULTS.batch, 'batch');
  }

  /** Sweeps now, then every `intervalMs` until stop(). */
  start(): this {
    if (!this.stopped) return this;
    this.stopped = false;
    this.schedule(0);
    return this;
  }

  /** Stops sweeping; resolves once a sweep in progress has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One sweep: turns every record whose lease lapsed IN_DOUBT. Returns how many it turned. */
  async sweepOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const swept = await this.store.sweepLapsedLeases({ graceMs: this.graceMs, limit: this.batch, sweeper: this.options.identity });
      for (const r of swept) {
        emitCallEvent({
          event: 'in_doubt',
          cause: 'lease_expired',
          generation: r.generation,
          detail: `${r.detail ?? 'lease expired'} (holder ${r.lapsedHolder ?? 'unknown'}; swept)`,
          trajectoryId: r.trajectoryId,
          turn: r.turn,
          callId: r.callId,
          key: r.key,
          tool: r.tool,
        });
      }
      total += swept.length;
      if (swept.length < this.batch || this.stopped) return total;
    }
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.sweepOnce()
        .then(
          () => (this.failing = false),
          (err: unknown) => {
            if (!this.failing) this.options.onError?.(asError(err));
            this.failing = true;
          },
        )
        .finally(() => {
          this.running = null;
          if (!this.stopped) this.schedule(this.intervalMs);
        });
    }, delayMs);
    // A sweeper never keeps its process alive on its own.
    this.timer.unref();
  }
}

function positive(n: number, name: string): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`${name}: must be an integer ≥ 1 (got ${n})`);
  return n;
}

function nonNegative(n: number, name: string): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name}: must be an integer ≥ 0 (got ${n})`);
  return n;
}
