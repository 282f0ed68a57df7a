/** Connection and migrations for the endpoint store. */
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import pg from 'pg';
import { migrationProvider } from '../../migrations/index';
import type { SettleDatabase } from './schema';

// Postgres `bigint` (event ids, counts) arrives as text; keep it that way, never lose precision.

export interface OpenDatabaseOptions {
  /** Pool size; the default suits one worker process. */
  max?: number;
  /** Called with the SQL of every statement executed (tests and benchmarks count them). */
  log?: (sql: string) => void;
}

export function openDatabase(url: string, options: OpenDatabaseOptions = {}): Kysely<SettleDatabase> {
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const log = options.log;
  const db = new Kysely<SettleDatabase>({
    dialect: new PostgresDialect({ pool }),
    ...(log ? { log: (event) => (event.level === 'query' ? log(event.query.sql) : undefined) } : {}),
  });
  directAccess.set(db, { pool, ...(log ? { log } : {}) });
  return db;
}

/** The pool under a handle made by openDatabase, for statements that run as named prepared statements (prepared.ts). */
export interface DirectAccess {
  pool: pg.Pool;
  log?: (sql: string) => void;
}

const directAccess = new WeakMap<object, DirectAccess>();

export function directAccessOf(db: object): DirectAccess | undefined {
  return directAccess.get(db);
}

/** Fails fast with an error that names DATABASE_URL (without its password). */
export async function assertReachable(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (err) {
    throw new Error(`DATABASE_URL ${redactUrl(url)} is unreachable: ${(err as Error).message}`);
  } finally {
    await client.end().catch(() => {});
  }
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

// Arbitrary constant: the advisory lock that serialises settle migrators across processes.
const MIGRATION_LOCK_ID = 0x5e771e;

/**
 * Brings the schema to the latest migration. Safe to run concurrently (a session advisory lock
 * serialises migrators, Kysely's own lock table guards the rest) and repeatedly (no-op when
 * up to date).
 */
export async function migrateToLatest(url: string): Promise<string[]> {
  const lockClient = new pg.Client({ connectionString: url });
  await lockClient.connect();
  const db = openDatabase(url, { max: 2 });
  try {
    await lockClient.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(JSON.stringify(error));
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  } finally {
    await lockClient.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {});
    await lockClient.end().catch(() => {});
    await db.destroy();
  }
}
