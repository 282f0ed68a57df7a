/**
 * Which process reports the installation's gauges (records by state, the oldest IN_DOUBT record,
 * the oldest waits): the one holding a session-level Postgres advisory lock. Every worker serves
 * /metrics, and every worker could read the same numbers from Postgres and visibility; reported
 * once per worker, `sum()` would count each record N times and an alert would see N copies. So
 * one process at a time exports them, on one connection of its own: the lock lives as long as that
 * connection, so a worker that dies (SIGKILL included) or loses its database hands it over, and
 * another worker takes it at its next gauge refresh.
 */
import pg from 'pg';

/** The advisory lock's key: settle's own number, distinct from any other lock in the database. */
export const EXPORTER_LOCK_KEY = 7_365_740_117n;

export class GaugeExporterLock {
  private client: pg.Client | null = null;
  private holding = false;

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
      const client = new pg.Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 5_000, keepAlive: true });
      // A restart of PostgreSQL emits 'error' on the client: the lock is gone; the next refresh retries.
      const lost = () => {
        if (this.client === client) void this.drop();
      };
      client.on('error', lost);
      client.on('end', lost);
      await client.connect();
      this.client = client;
    }
    const { rows } = await this.client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [this.key.toString()]);
    this.holding = rows[0]?.locked === true;
    return this.holding;
  }

  /** Whether the last check found this process the exporter (no statement). */
  get exporting(): boolean {
    return this.holding;
  }

  /** Ends the connection, which releases the lock. */
  async close(): Promise<void> {
    await this.drop();
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.holding = false;
    await client?.end().catch(() => {});
  }
}
