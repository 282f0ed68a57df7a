/** Connection and migrations for the endpoint store. */
import { Kysely, Migrator, PostgresAdapter, PostgresDialect, type DialectAdapter } from 'kysely';
import pg from 'pg';
import { migrationProvider } from '../../migrations/index';
import type { SettleDatabase } from './schema';
import { asError } from '../../core/errors';

// Postgres `bigint` (event ids, counts) arrives as text; keep it that way, never lose precision.

export interface OpenDatabaseOptions {
  /** Pool size; the default suits one worker process. */
  max?: number;
  /** Called with the SQL of every statement executed (tests and benchmarks count them). */
  log?: (sql: string) => void;
}

export function openDatabase(url: string, options: OpenDatabaseOptions = {}): Kysely<SettleDatabase> {
  const pool = openPool(url, options.max ?? 10);
  const log = options.log;
  const db = new Kysely<SettleDatabase>({
    dialect: new PostgresDialect({ pool }),
    ...(log ? { log: (event) => (event.level === 'query' ? log(event.query.sql) : undefined) } : {}),
  });
  directAccess.set(db, { pool, namedStatements: true, ...(log ? { log } : {}) });
  return db;
}

function openPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // A server that is down or paused must fail a statement, not hang it (callers retry).
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
  });
  // A restart of PostgreSQL (57P01 on fast shutdown, a reset connection on a crash) makes pg emit
  // 'error' on its clients. Idle clients report it to the pool; a client that is checked out
  // reports it on itself as well as to its statement. Neither may crash the process: the
  // statement fails (and is retried by its caller), and the pool discards the broken client.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** The pool under a handle made by openDatabase, for statements that run as named prepared statements (prepared.ts). */
export interface DirectAccess {
  pool: pg.Pool;
  log?: (sql: string) => void;
  /**
   * Whether statements may be prepared by name on a connection: not through a pooler that shares
   * server sessions, where a name prepared on one server session is unknown to the next.
   */
  namedStatements: boolean;
}

/** For a handle whose connections share server sessions (a transaction-mode pooler): statements run unnamed. */
export function useUnnamedStatements(db: object): void {
  const direct = directAccess.get(db);
  if (direct) direct.namedStatements = false;
}

const directAccess = new WeakMap<object, DirectAccess>();

export function directAccessOf(db: object): DirectAccess | undefined {
  return directAccess.get(db);
}

/** Fails fast with an error that names DATABASE_URL (without its password). */
export async function assertReachable(url: string): Promise<void> {
  const problem = await probeDatabase(url);
  if (problem) {
    const fix = tlsFailureFix(problem);
    throw new Error(`DATABASE_URL ${redactUrl(url)} is ${fix ? 'unusable' : 'unreachable'}: ${problem.message}${fix ? `: ${fix}` : ''}`);
  }
}

/**
 * Waits until the database answers, retrying with backoff (0.5 s doubling to 10 s) and logging each
 * wait: a worker may start before PostgreSQL or while it restarts. Errors that waiting cannot fix
 * (authentication, a database that does not exist) are thrown at once.
 */
export async function waitForDatabase(url: string, log: (line: string) => void, options: { maxDelayMs?: number } = {}): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const problem = await probeDatabase(url);
    if (!problem) {
      if (attempt > 0) log(`database ${redactUrl(url)} is reachable`);
      return;
    }
    if (!isTransient(problem)) {
      const fix = tlsFailureFix(problem);
      throw new Error(`DATABASE_URL ${redactUrl(url)} is unusable: ${problem.message}${fix ? `: ${fix}` : ''}`);
    }
    const delayMs = Math.min(500 * 2 ** attempt, options.maxDelayMs ?? 10_000);
    log(`waiting for the database: ${redactUrl(url)} is unreachable (${problem.message}); retrying in ${delayMs / 1000} s`);
    await new Promise((r) => setTimeout(r, delayMs));
  }
}

async function probeDatabase(url: string): Promise<Error | null> {
  let client: pg.Client;
  try {
    // pg reads sslrootcert, sslcert and sslkey here: a missing file throws.
    client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  } catch (err) {
    return asError(err);
  }
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    return asError(err);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Whether starting against this database can succeed by waiting: not when authentication fails
 * (SQLSTATE class 28), the database does not exist (3D) or the URL cannot be parsed.
 */
export function isTransient(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('28') || code.startsWith('3D'))) return false;
  if (tlsFailureFix(err) !== null) return false;
  return !(err instanceof TypeError); // pg throws TypeError for an unparseable connection string
}

/**
 * For a connection that failed on TLS (an untrusted or mismatched server certificate, a server
 * without TLS, an unreadable sslrootcert/sslcert/sslkey file), what to fix; null for any other
 * failure. Waiting cannot fix these: the worker stops at once rather than retrying.
 */
export function tlsFailureFix(err: Error): string | null {
  const code = (err as { code?: unknown }).code;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return "connect by a host name or address the server's certificate names, or reissue the certificate with it";
  if (typeof code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code))
    return "the server's certificate is not signed by a trusted CA: set sslrootcert=<the CA file that signed it> in DATABASE_URL";
  if (/server does not support SSL/i.test(err.message))
    return 'the server refused TLS and settle never falls back to plaintext: enable ssl on the server, or drop sslmode for a loopback server';
  if (code === 'ENOENT' || code === 'EACCES') return 'check the sslrootcert, sslcert and sslkey paths in DATABASE_URL';
  if (typeof code === 'string' && code.startsWith('ERR_SSL')) return 'the TLS handshake failed: check the server’s TLS settings';
  return null;
}

const CONNECTION_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Whether a statement failed because the database was unreachable or restarting (so the same
 * statement may succeed later), rather than because of the statement itself: a refused or reset
 * connection, SQLSTATE class 08 (connection exception), 57P01–57P03 (shutdown, crash, starting
 * up), 53 (out of resources, e.g. too many connections), and pg's own "Connection terminated" and
 * connect-timeout errors.
 */
export function isTransientDatabaseError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (CONNECTION_ERRNOS.has(code) || code.startsWith('08') || code.startsWith('53') || /^57P0[123]$/.test(code)) return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended/i.test(
    err.message,
  );
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
 * Brings the schema to the latest migration. Safe to run concurrently (an advisory lock
 * serialises migrators) and repeatedly (no-op when up to date).
 *
 * The lock is transaction-scoped, held by a transaction kept open on a connection of its own
 * while the migrations run: through a transaction-mode pooler that transaction keeps one server
 * session, and the lock ends with it however the migrator ends. A session-level lock there would
 * be taken on one server session and released (or not) on another, leaving the next migrator
 * waiting. Kysely's own migration lock is session-level, so it is left out (migrationDialect).
 */
export async function migrateToLatest(url: string): Promise<string[]> {
  const lockClient = new pg.Client({ connectionString: url });
  lockClient.on('error', () => {}); // a restart during migration fails the statement in flight, not the process
  await lockClient.connect();
  const db = new Kysely<SettleDatabase>({ dialect: migrationDialect(openPool(url, 2)) });
  try {
    await lockClient.query('BEGIN');
    await lockClient.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(JSON.stringify(error));
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  } finally {
    await lockClient.query('ROLLBACK').catch(() => {}); // ends the transaction, and so the lock
    await lockClient.end().catch(() => {});
    await db.destroy();
  }
}

/** Postgres, without Kysely's session-level migration lock: migrateToLatest holds its own, transaction-scoped. */
function migrationDialect(pool: pg.Pool): PostgresDialect {
  return new (class extends PostgresDialect {
    override createAdapter(): DialectAdapter {
      return new (class extends PostgresAdapter {
        override async acquireMigrationLock(): Promise<void> {}
        override async releaseMigrationLock(): Promise<void> {}
      })();
    }
  })({ pool });
}
