/**
 * The stack launcher's promises to a newcomer: it starts real servers, stops every process it
 * started, and fails with messages that say what to do.
 */
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import pg_ from 'pg';
import { assertReachable, migrateToLatest } from '../../activities/store/database';
import { migrations } from '../../migrations/index';
import { startTemporal, findTemporalCli, LOW_LATENCY_DYNAMIC_CONFIG, TemporalCliNotFound } from '../../stack/temporal';
import { startPostgres } from '../../stack/postgres';
import { isListening } from '../../stack/ports';

/** The status of a GET to 127.0.0.1:port under the given Host (which fetch would not let a caller choose). */
function statusUnderHost(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers: { Host: host } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
      .on('error', reject);
  });
}

describe('stack launcher', () => {
  it('starts Temporal on a free port when the preferred one is taken, and stop leaves nothing listening', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const taken = (blocker.address() as net.AddressInfo).port;
    const lines: string[] = [];
    const temporal = await startTemporal({ port: taken, log: (l) => lines.push(l) });
    try {
      const port = Number(temporal.address.split(':')[1]);
      expect(port).not.toBe(taken);
      expect(lines.join('\n')).toMatch(new RegExp(`port ${taken} is in use`));
      expect(await isListening(port)).toBe(true);
      // The low-latency dynamic config reaches the server (its effect is measured by the bench).
      const argv = fs.readFileSync(`/proc/${temporal.pid}/cmdline`, 'utf8').split('\0');
      for (const [key, value] of Object.entries(LOW_LATENCY_DYNAMIC_CONFIG)) {
        expect(argv).toContain(`${key}=${JSON.stringify(value)}`);
      }
      expect(temporal.dynamicConfig).toEqual(LOW_LATENCY_DYNAMIC_CONFIG);
      const ui = Number(new URL(temporal.uiUrl!).port);
      expect((await fetch(temporal.uiUrl!)).status).toBe(200);
      // Neither HTTP face answers a rebound DNS name: the UI's proxy (421), the HTTP API (403).
      const httpPort = Number(argv[argv.indexOf('--http-port') + 1]);
      expect(await statusUnderHost(ui, '/api/v1/namespaces', `evil.example:${ui}`)).toBe(421);
      expect(await statusUnderHost(ui, '/api/v1/namespaces', `localhost:${ui}`)).toBe(200);
      expect(await statusUnderHost(httpPort, '/api/v1/namespaces', `evil.example:${httpPort}`)).toBe(403);
      expect(await statusUnderHost(httpPort, '/api/v1/namespaces', `127.0.0.1:${httpPort}`)).toBe(200);
      await temporal.stop();
      expect(await isListening(port)).toBe(false);
      expect(await isListening(ui)).toBe(false);
    } finally {
      await temporal.stop();
      blocker.close();
    }
  });

  it('starts an embedded PostgreSQL, migrates it, and stops it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-pg-launch-'));
    fs.chmodSync(dataDir, 0o755);
    const saved = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    try {
      const pg = await startPostgres({ dataDir: path.join(dataDir, 'data'), ephemeral: true });
      const port = Number(new URL(pg.url).port);
      await assertReachable(pg.url);
      // Migrations are safe to run concurrently and repeatedly (many workers starting at once):
      // on a fresh database, six concurrent migrators apply each migration exactly once.
      const admin = new pg_.Client({ connectionString: pg.adminUrl });
      await admin.connect();
      await admin.query(`create database fresh owner ${new URL(pg.url).username}`);
      await admin.end();
      const fresh = Object.assign(new URL(pg.url), { pathname: '/fresh' }).toString();
      const runs = await Promise.all(Array.from({ length: 6 }, () => migrateToLatest(fresh)));
      expect(runs.flat()).toEqual(Object.keys(migrations));
      expect(await migrateToLatest(fresh)).toEqual([]);
      await pg.stop();
      expect(await isListening(port)).toBe(false);
    } finally {
      if (saved !== undefined) process.env.DATABASE_URL = saved;
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('names DATABASE_URL when it is unreachable', async () => {
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = 'postgres://nobody:secret@127.0.0.1:1/nowhere';
    try {
      await expect(startPostgres()).rejects.toThrow(/^DATABASE_URL postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/nowhere is unreachable/);
    } finally {
      if (saved === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = saved;
    }
  });

  it('with no CLI, no Go and no download, says how to provide TEMPORAL_CLI', async () => {
    const emptyBin = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-nobin-'));
    const error = await startTemporal({ env: { PATH: '' }, binDir: emptyBin, allowDownload: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemporalCliNotFound);
    expect((error as Error).message).toMatch(/Set TEMPORAL_CLI=\/path\/to\/temporal/);
  });

  it('refuses a TEMPORAL_CLI that is not an executable file, naming it', () => {
    expect(() => findTemporalCli(() => {}, { env: { TEMPORAL_CLI: '/nonexistent/temporal' } })).toThrow(
      /TEMPORAL_CLI=\/nonexistent\/temporal is not an executable file/,
    );
  });

  it('finds the CLI in order: TEMPORAL_CLI, PATH, cached binary', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-find-'));
    const exe = (name: string) => {
      const p = path.join(dir, name);
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, '#!/bin/sh\n', { mode: 0o755 });
      return p;
    };
    const explicit = exe('explicit/temporal');
    const onPath = exe('path/temporal');
    const cached = exe('cache/temporal');
    const find = (env: NodeJS.ProcessEnv) => findTemporalCli(() => {}, { env, binDir: path.dirname(cached) });
    expect(find({ TEMPORAL_CLI: explicit, PATH: path.dirname(onPath) })).toMatchObject({ path: explicit, source: 'TEMPORAL_CLI' });
    expect(find({ PATH: path.dirname(onPath) })).toMatchObject({ path: onPath, source: 'PATH' });
    expect(find({ PATH: '' })).toMatchObject({ path: cached });
  });
});
