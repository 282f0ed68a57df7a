/**
 * A record store as production runs it, for the chaos harness: a PostgreSQL 15 primary, a
 * streaming standby (synchronous or asynchronous), and PgBouncer in transaction mode in front —
 * the only address the workers know. A failover is scripted here as a failover manager would run
 * it: the primary SIGKILLed, the standby promoted (`pg_ctl promote`), the pooler re-pointed at it
 * and RELOADed; then a fresh standby is cloned from the new primary, so the next failover has a
 * target. With `tls`, every server of it and the pooler serve certificates from a local CA, the
 * pooler requires TLS of its clients and verifies its server (verify-full), and the workers'
 * URL says sslmode=verify-full. What this skips compared with Patroni is said in
 * docs/deploying.md#record-store-failover.
 */
import { migrateToLatest } from '../../activities/store/database';
import {
  asAdmin,
  promote,
  setSynchronousStandbyNames,
  SETTLE_ROLE,
  startPgBouncer,
  startPrimary,
  startStandby,
  waitFor,
  type PgBouncer,
  type Pg15Server,
  type PoolerTls,
} from './postgres15';

/** How the standby is attached: commits wait for it (`sync`), or not (`async`). */
export type Replication = 'sync' | 'async';

export interface FailoverReport {
  /** Calls IN_FLIGHT on the primary when it was killed (read on it just before). */
  inFlight: string[];
  /** WAL the standby had not received when the primary died (bytes, read at the kill). */
  unsentBytes: number;
}

export class ReplicatedRecordStore {
  private standbys = 1;
  /** WAL senders paused by holdReplication: they die with their primary (a paused backend cannot see it gone). */
  private held: number[] = [];

  private constructor(
    readonly replication: Replication,
    private primary: Pg15Server,
    private standby: Pg15Server,
    private readonly bouncer: PgBouncer,
    private readonly tls: PoolerTls | undefined,
  ) {}

  static async start(replication: Replication, tls?: PoolerTls): Promise<ReplicatedRecordStore> {
    const primary = await startPrimary(tls ? { tls } : {});
    // pg_monitor: settle's start check names which replicas are synchronous.
    await asAdmin(primary.adminUrl, (c) => c.query(`GRANT pg_monitor TO ${SETTLE_ROLE}`));
    await migrateToLatest(primary.url);
    const standby = await startStandby(primary, 'standby1', tls);
    if (replication === 'sync') await makeSynchronous(primary, 'standby1');
    const bouncer = await startPgBouncer(primary, 'transaction', tls);
    return new ReplicatedRecordStore(replication, primary, standby, bouncer, tls);
  }

  /** The workers' DATABASE_URL: PgBouncer, whichever server is primary (with TLS: sslmode=verify-full). */
  get url(): string {
    return this.bouncer.url;
  }

  /**
   * The primary dies with `lagMs` of replication behind it: its WAL sender is paused (SIGSTOP)
   * that long, as a slow link or a busy replica would hold it, then the primary's process group
   * is SIGKILLed. Synchronously replicated, commits wait meanwhile and none is acknowledged that
   * the standby lacks; asynchronously, what was committed during the pause is acknowledged and
   * lost. The standby is promoted, the pooler follows it, and a new standby is cloned.
   */
  async failOver(lagMs: number): Promise<FailoverReport> {
    await this.holdReplication();
    await new Promise((r) => setTimeout(r, lagMs));
    return this.failOverNow();
  }

  /**
   * Pauses the primary's WAL sender (SIGSTOP): from now on the standby receives nothing, and
   * synchronous commits wait. Only a failover (failOverNow) ends it: the paused process dies with its primary.
   */
  async holdReplication(): Promise<void> {
    const sender = await asAdmin(this.primary.adminUrl, (c) =>
      c.query<{ pid: number }>("SELECT pid FROM pg_stat_replication WHERE state = 'streaming'"),
    );
    for (const { pid } of sender.rows) {
      process.kill(pid, 'SIGSTOP');
      this.held.push(pid);
    }
  }

  /** The primary SIGKILLed now, the standby promoted, the pooler re-pointed, a new standby cloned. */
  async failOverNow(): Promise<FailoverReport> {
    const old = this.primary;
    const seen = await asAdmin(old.adminUrl, async (c) => {
      const calls = await c.query<{ key: string }>("SELECT key FROM settle_endpoint_records WHERE state = 'IN_FLIGHT'");
      const lag = await c.query<{ bytes: string | null }>(
        'SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), sent_lsn))::text AS bytes FROM pg_stat_replication',
      );
      return { inFlight: calls.rows.map((r) => r.key), unsentBytes: Number(lag.rows[0]?.bytes ?? 0) };
    });
    await old.crash();
    for (const pid of this.held.splice(0)) killQuietly(pid);
    promote(this.standby);
    this.primary = this.standby;
    this.bouncer.retarget(this.primary);
    await old.stop(); // already dead: removes its directory
    // A new standby, so that there is something to fail over to next time.
    const name = `standby${++this.standbys}`;
    this.standby = await startStandby(this.primary, name, this.tls);
    if (this.replication === 'sync') await makeSynchronous(this.primary, name);
    return seen;
  }

  /** PgBouncer SIGKILLed (every client connection dropped), started again on its port after `downMs`. */
  async restartPooler(downMs: number): Promise<void> {
    await this.bouncer.crash();
    await new Promise((r) => setTimeout(r, downMs));
    await this.bouncer.start();
  }

  async destroy(): Promise<void> {
    for (const pid of this.held.splice(0)) killQuietly(pid);
    await this.bouncer.stop().catch(() => {});
    await this.standby.stop().catch(() => {});
    await this.primary.stop().catch(() => {});
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** synchronous_standby_names set to `name`, once the primary reports it synchronous. */
async function makeSynchronous(primary: Pg15Server, name: string): Promise<void> {
  await setSynchronousStandbyNames(primary, name);
  await waitFor(primary.adminUrl, `SELECT 1 FROM pg_stat_replication WHERE application_name = '${name}' AND sync_state = 'sync'`);
}
