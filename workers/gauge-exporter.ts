/**
 * Which process reports the installation's gauges (records by state, the oldest IN_DOUBT record,
 * the oldest waits): the one holding a session-level Postgres advisory lock. Every worker serves
 * /metrics, and every worker could read the same numbers from Postgres and visibility; reported
 * once per worker, `sum()` would count each record N times and an alert would see N copies. So
 * one process at a time exports them, on one connection of its own: the lock lives as long as that
 * connection, so a worker that dies (SIGKILL included) or loses its database hands it over, and
 * another worker takes it at its next gauge refresh.
 *
 * Through a pooler that shares server sessions (PgBouncer's transaction mode) a session-level lock
 * would stay on whichever server session took it, after its worker is gone. There the lock is
 * transaction-scoped instead, in a transaction the exporter keeps open: the pooler keeps that
 * server session for this connection until the transaction ends, and ends it (closing the server
 * session) when the connection drops. That transaction holds no snapshot, so it holds back no
 * vacuum; it exempts itself from idle_in_transaction_session_timeout.
 */
import pg from 'pg';
import { detectPooling } from '../activities/store/record-store-settings';

/** The advisory lock's key: settle's own number, distinct from any other lock in the database. */
export const EXPORTER_LOCK_KEY = 7_365_740_117n;

/** The exporter's connection in pg_stat_activity (docs/deploying.md: monitoring may exempt it from long-transaction alerts). */
export const EXPORTER_APPLICATION_NAME = 'settle-gauge-exporter';

export class GaugeExporterLock {
  private client: pg.Client | null = null;
  private holding = false;
  /** Decided at the first connection: whether the lock may live as long as the session. */
  private scope: 'session' | 'transaction' | null = null;

  /** `key`: the lock's number (tests sharing one database use their own). */
  constructor(
    private readonly databaseUrl: string,
    private readonly key: bigint = EXPORTER_LOCK_KEY,
  ) {}

  /**
   * Whether this process is the exporter now: keeps the lock while its connection lives, tries to
   * take it otherwise. Throws when the database cannot be reached (the caller reports that).
   */
  async held(): Promise<boolean> {
    if (this.holding && this.client) {
      // The lock is as alive as its connection: a statement that fails means both are gone.
      try {
        await this.client.query('SELECT 1');
        return true;
      } catch {
        await this.drop();
      }
    }
    if (!this.client) {
      this.scope ??= (await detectPooling(this.databaseUrl)) === 'session' ? 'session' : 'transaction';
      const client = new pg.Client({
        connectionString: this.databaseUrl,
        connectionTimeoutMillis: 5_000,
        keepAlive: true,
        // Named in pg_stat_activity: behind a transaction pooler this session stays idle in transaction on purpose.
        application_name: EXPORTER_APPLICATION_NAME,
      });
      // A restart of PostgreSQL emits 'error' on the client: the lock is gone; the next refresh retries.
      const lost = () => {
        if (this.client === client) void this.drop();
      };
      client.on('error', lost);
      client.on('end', lost);
      await client.connect();
      this.client = client;
    }
    try {
      this.holding = this.scope === 'session' ? await this.trySessionLock(this.client) : await this.tryTransactionLock(this.client);
    } catch (err) {
      await this.drop(); // a half-begun transaction must not outlive the failed attempt
      throw err;
    }
    return this.holding;
  }

  private async trySessionLock(client: pg.Client): Promise<boolean> {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [this.key.toString()]);
    return rows[0]?.locked === true;
  }

  /** Taken, the transaction stays open (it is the lock); not taken, it ends at once. */
  private async tryTransactionLock(client: pg.Client): Promise<boolean> {
    await client.query('BEGIN');
    await client.query('SET LOCAL idle_in_transaction_session_timeout = 0');
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [this.key.toString()]);
    const locked = rows[0]?.locked === true;
    if (!locked) await client.query('ROLLBACK');
    return locked;
  }

  /** Whether the last check found this process the exporter (no statement). */
  get exporting(): boolean {
    return this.holding;
  }

  /** Ends the connection, which releases the lock (and the transaction that holds it, if one does). */
  async close(): Promise<void> {
    await this.drop();
  }

  private async drop(): Promise<void> {
    const client = this.client;
    const inTransaction = this.holding && this.scope === 'transaction';
    this.client = null;
    this.holding = false;
    // Ended explicitly, the pooler hands back a clean server session instead of closing it.
    if (inTransaction) await client?.query('ROLLBACK').catch(() => {});
    await client?.end().catch(() => {});
  }
}
