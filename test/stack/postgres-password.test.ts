/**
 * Issue 12 item 4: the embedded database's password was the constant "settle", so anything that
 * reached its port logged in. Now each data directory has its own random password, kept
 * owner-only beside it and reused on restart; a cluster from before is moved to one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startPostgres } from '../../stack/postgres';
import { passwordFileFor, rolePasswordFileFor } from '../../stack/postgres-password';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-pgpass-'));
fs.chmodSync(root, 0o755); // the postgres user (as root) must reach its data directory
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const savedUrl = process.env.DATABASE_URL;
delete process.env.DATABASE_URL;
afterAll(() => {
  if (savedUrl !== undefined) process.env.DATABASE_URL = savedUrl;
});

/** Whether the cluster's superuser logs in with `password`. */
async function canLogIn(url: string, password: string): Promise<boolean> {
  const u = new URL(url);
  const client = new pg.Client({ host: u.hostname, port: Number(u.port), user: 'postgres', password, database: 'settle' });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

describe('embedded PostgreSQL password', () => {
  it('is random per data directory, owner-only on disk, reused on restart; the old constant no longer logs in', async () => {
    const dataDir = path.join(root, 'data');
    const first = await startPostgres({ dataDir });
    let password: string;
    try {
      password = decodeURIComponent(new URL(first.adminUrl).password);
      expect(password).not.toBe('settle');
      expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(fs.statSync(passwordFileFor(dataDir)).mode & 0o777).toBe(0o600);
      expect(await canLogIn(first.url, 'settle')).toBe(false);
      expect(await canLogIn(first.url, password)).toBe(true);
      // settle's own role has a password of its own, kept the same way.
      const own = decodeURIComponent(new URL(first.url).password);
      expect(own).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(own).not.toBe(password);
      expect(fs.statSync(rolePasswordFileFor(dataDir)).mode & 0o777).toBe(0o600);
    } finally {
      await first.stop();
    }
    const again = await startPostgres({ dataDir });
    try {
      expect(decodeURIComponent(new URL(again.adminUrl).password)).toBe(password);
      expect(await canLogIn(again.url, password)).toBe(true);
    } finally {
      await again.stop();
    }
    // Another data directory: another password.
    const other = await startPostgres({ dataDir: path.join(root, 'other'), ephemeral: true });
    try {
      expect(decodeURIComponent(new URL(other.adminUrl).password)).not.toBe(password);
    } finally {
      await other.stop();
    }
  });

  it('moves a cluster that still has the constant password to a random one at its next start', async () => {
    const dataDir = path.join(root, 'legacy');
    const made = await startPostgres({ dataDir });
    // Make it a cluster from before: the constant password and no password file.
    const client = new pg.Client({ connectionString: made.adminUrl });
    await client.connect();
    await client.query(`ALTER ROLE postgres PASSWORD 'settle'`);
    await client.end();
    await made.stop();
    fs.rmSync(passwordFileFor(dataDir));

    const moved = await startPostgres({ dataDir, ephemeral: true });
    try {
      expect(decodeURIComponent(new URL(moved.adminUrl).password)).not.toBe('settle');
      expect(await canLogIn(moved.url, 'settle')).toBe(false);
      expect(await canLogIn(moved.url, decodeURIComponent(new URL(moved.adminUrl).password))).toBe(true);
    } finally {
      await moved.stop();
    }
  });
});
