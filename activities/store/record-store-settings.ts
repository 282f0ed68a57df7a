/**
 * Reads what core/record-store-requirements.ts judges, over connections to DATABASE_URL as the
 * worker makes them: the settings its own role and database see, the replicas attached to the
 * server, the clock, and whether a pooler shares server sessions between connections.
 */
import pg from 'pg';
import type { PoolingMode, RecordStoreSettings } from '../../core/record-store-requirements';

/**
 * One statement, so a transaction-mode pooler runs it on one server session. Logical senders
 * (an active logical slot's process) are left out: they feed subscribers, not failover targets.
 */
const SETTINGS_SQL = `
  SELECT pg_is_in_recovery() AS in_recovery,
         current_setting('synchronous_commit') AS synchronous_commit,
         current_setting('synchronous_standby_names') AS synchronous_standby_names,
         current_setting('fsync') AS fsync,
         current_setting('full_page_writes') AS full_page_writes,
         extract(epoch from clock_timestamp()) * 1000 AS server_ms,
         coalesce((
           SELECT json_agg(json_build_object('name', r.application_name, 'syncState', r.sync_state) ORDER BY r.application_name)
           FROM pg_stat_replication r
           WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots s WHERE s.slot_type = 'logical' AND s.active_pid = r.pid)
         ), '[]'::json) AS replicas`;

interface SettingsRow {
  in_recovery: boolean;
  synchronous_commit: string;
  synchronous_standby_names: string;
  fsync: string;
  full_page_writes: string;
  server_ms: string;
  replicas: { name: string | null; syncState: string | null }[];
}

export async function readRecordStoreSettings(url: string): Promise<RecordStoreSettings> {
  const pooling = await detectPooling(url);
  return withClient(url, async (client) => {
    const before = Date.now();
    const { rows } = await client.query<SettingsRow>(SETTINGS_SQL);
    const after = Date.now();
    const row = rows[0]!;
    return {
      inRecovery: row.in_recovery,
      synchronousCommit: row.synchronous_commit,
      synchronousStandbyNames: row.synchronous_standby_names,
      fsync: row.fsync,
      fullPageWrites: row.full_page_writes,
      replicas: row.replicas,
      clockSkewMs: Number(row.server_ms) - (before + after) / 2,
      clockUncertaintyMs: (after - before) / 2,
      pooling,
    };
  });
}

const POOLING_ROUNDS = 3;

/**
 * Whether connections to `url` keep their own server session. Two connections, A and B, ask for
 * their server process in turn (A, B, A) a few times. Directly or through a session-mode pooler,
 * A always sees one process and B another. A pooler that shares server sessions hands A's idle
 * session to B (PgBouncer reuses the most recent one) or A a different one: either shows. One
 * such sighting is proof; none, over quiet rounds, is what a session-keeping path always gives.
 * Sharing found, a transaction block tells transaction mode from statement mode, which refuses it.
 */
export async function detectPooling(url: string): Promise<PoolingMode> {
  return withClient(url, (a) =>
    withClient(url, async (b) => {
      const pid = async (c: pg.Client) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      let shared = false;
      for (let round = 0; round < POOLING_ROUNDS && !shared; round++) {
        const first = await pid(a);
        const other = await pid(b);
        const again = await pid(a);
        shared = first !== again || first === other;
      }
      if (!shared) return 'session';
      try {
        await a.query('BEGIN');
        await a.query('SELECT 1');
        await a.query('COMMIT');
        return 'transaction';
      } catch {
        return 'statement';
      }
    }),
  );
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {}); // a connection lost mid-check fails the statement in flight, not the process
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => {});
  }
}
