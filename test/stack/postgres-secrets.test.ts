/**
 * The embedded cluster keeps the worker's secrets: its superuser password is never in a file other
 * local users can read (not even while initdb runs), the server inherits none of the worker's
 * environment, and settle connects as its own role, which is no superuser and so cannot read the
 * server's files (`/proc/<pid>/environ` among them) over SQL — yet can migrate and run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startPostgres, type PostgresHandle } from '../../stack/postgres';
import { passwordFileFor } from '../../stack/postgres-password';
import { postgresEnvironment } from '../../stack/postgres-process';
import { migrateToLatest, openDatabase } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-pgsecrets-'));
fs.chmodSync(root, 0o755); // the postgres user (as root) must reach its data directory
const secrets = {
  SETTLE_KEY_SECRET: `key-secret-${process.pid}-${Date.now()}`,
  SETTLE_CAP_KEYS: `cap-keys-${process.pid}-${Date.now()}`,
  OPENAI_API_KEY: `sk-model-${process.pid}-${Date.now()}`,
};
const saved = { ...process.env };
beforeAll(() => {
  delete process.env.DATABASE_URL;
  Object.assign(process.env, secrets);
});
afterAll(() => {
  for (const name of [...Object.keys(secrets), 'DATABASE_URL']) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  fs.rmSync(root, { recursive: true, force: true });
});

async function query(url: string, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * Every file under the data directories' parent and under TMPDIR (pointed inside it), as it is at
 * each change while `work` runs.
 */
async function watchFiles(work: () => Promise<void>): Promise<{ file: string; mode: number; text: string }[]> {
  const tmp = fs.mkdtempSync(path.join(root, 'tmp-'));
  fs.chmodSync(tmp, 0o1777);
  const seen: { file: string; mode: number; text: string }[] = [];
  const watcher = fs.watch(root, { recursive: true }, (_event, name) => {
    if (!name) return;
    const file = path.join(root, name.toString());
    try {
      const stat = fs.statSync(file);
      if (stat.isFile() && stat.size < 4096) seen.push({ file, mode: stat.mode & 0o777, text: fs.readFileSync(file, 'utf8') });
    } catch {
      /* gone already */
    }
  });
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    await work();
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    watcher.close();
  }
  return seen;
}

describe('embedded PostgreSQL and the worker secrets', () => {
  it('never writes the superuser password where other local users can read it, not even during initdb', async () => {
    const dataDir = path.join(root, 'init');
    let postgres: PostgresHandle | undefined;
    const seen = await watchFiles(async () => {
      postgres = await startPostgres({ dataDir, ephemeral: true });
    });
    try {
      const password = fs.readFileSync(passwordFileFor(dataDir), 'utf8').trim();
      const holding = seen.filter((f) => f.text.includes(password));
      expect(holding.length).toBeGreaterThan(0); // initdb reads it from a file (and it is kept in one): the watch saw them
      for (const f of holding) expect({ file: f.file, mode: f.mode.toString(8) }).toEqual({ file: f.file, mode: '600' });
    } finally {
      await postgres?.stop();
    }
  });

  it('the server inherits none of the worker environment, and settle’s role cannot read server files but migrates and runs', async () => {
    const dataDir = path.join(root, 'env');
    const postgres = await startPostgres({ dataDir, ephemeral: true });
    try {
      const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
      for (const value of Object.values(secrets)) expect(environ).not.toContain(value);
      expect(environ.split('\0').filter((v) => v.startsWith('SETTLE_'))).toEqual([]);

      await expect(query(postgres.url, `select pg_read_binary_file('/proc/${pid}/environ')`)).rejects.toThrow(/permission denied/);
      expect((await query(postgres.url, 'select rolsuper from pg_roles where rolname = current_user')).rows).toEqual([{ rolsuper: false }]);
      expect(new URL(postgres.url).username).not.toBe('postgres');

      expect(await migrateToLatest(postgres.url)).toEqual([]);
      const db = openDatabase(postgres.url, { max: 1 });
      try {
        expect(await new EndpointStore(db).get('no-such-key')).toBeUndefined();
      } finally {
        await db.destroy();
      }
    } finally {
      await postgres.stop();
    }
  });

  it('hands a cluster set up as the superuser over to settle’s role at its next start', async () => {
    const dataDir = path.join(root, 'handover');
    const first = await startPostgres({ dataDir });
    // As before: the superuser owned settle's database and tables.
    await query(
      first.adminUrl,
      `ALTER DATABASE settle OWNER TO postgres;
       DO $$ DECLARE r record; BEGIN
         FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'public'
         LOOP EXECUTE format('ALTER TABLE %I OWNER TO postgres', r.tablename); END LOOP;
       END $$`,
    );
    await first.stop();
    const again = await startPostgres({ dataDir, ephemeral: true });
    try {
      const owners = await query(again.adminUrl, `select distinct tableowner from pg_tables where schemaname = 'public'`);
      expect(owners.rows).toEqual([{ tableowner: 'settle' }]);
      await query(again.url, 'select count(*) from settle_endpoint_records');
    } finally {
      await again.stop();
    }
  });

  it('passes only locale, time zone and PATH to the server', () => {
    expect(postgresEnvironment({ PATH: '/bin', LANG: 'C.UTF-8', LC_ALL: 'C', TZ: 'UTC', SETTLE_KEY_SECRET: 'x', HOME: '/root' })).toEqual({
      PATH: '/bin',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      TZ: 'UTC',
      LC_MESSAGES: 'C',
    });
  });
});
