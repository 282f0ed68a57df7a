/**
 * The record store over TLS: a PostgreSQL 15 serving a certificate from a local CA (openssl), and
 * DATABASE_URL with sslmode=verify-full and sslrootcert. The worker (workers/worker.ts), `settle
 * records`, `settle status` and `settle doctor` connect with it; a wrong CA, a wrong host name and
 * a server without TLS are each refused in one line, at once (no retrying, no plaintext fallback).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { sql } from 'kysely';
import { SettleClient } from '../../client/index';
import { assertReachable, openDatabase } from '../../activities/store/database';
import { readDatabaseTls } from '../../core/database-tls';
import { runSettle } from '../support/cli';
import { createLocalCa, type LocalCa } from '../../chaos/infra/local-ca';
import { startPrimary, type Pg15Server } from '../../chaos/infra/postgres15';
import { killWorkerProcesses, startWorkerProcess } from '../support/worker-process';
import { tempWorkspace, testWorkspaceRoot, uniqueId } from '../support/env';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));

let ca: LocalCa;
let otherCa: LocalCa;
let server: Pg15Server;
let verified: string;

const withParams = (url: string, params: Record<string, string>) => {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
};

beforeAll(async () => {
  ca = createLocalCa();
  otherCa = createLocalCa('another CA');
  // The certificate names 127.0.0.1 only; the server also listens on 127.0.0.2, a name it does not hold.
  server = await startPrimary({ tls: ca.issue('db', ['IP:127.0.0.1']), listen: ['127.0.0.1', '127.0.0.2'] });
  verified = withParams(server.url, { sslmode: 'verify-full', sslrootcert: ca.certFile });
});
afterAll(async () => {
  killWorkerProcesses();
  await server?.stop();
  ca?.remove();
  otherCa?.remove();
});

const env = (databaseUrl: string) => ({
  DATABASE_URL: databaseUrl,
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  TEMPORAL_NAMESPACE: 'default',
});

describe('the record store over TLS (sslmode=verify-full, a private CA)', { timeout: 180_000 }, () => {
  it('the worker, settle records, settle status and settle doctor connect, and the connection is encrypted', async () => {
    const taskQueue = uniqueId('tls-pg');
    const worker = startWorkerProcess(WORKER, {
      ...env(verified),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
      SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    });
    for (let i = 0; i < 600 && !worker.output().includes('settle worker: polling'); i++) {
      if (worker.child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(worker.output()).toContain('settle worker: polling');
    // One line each at start: how the record store and Temporal are reached, and the clock.
    expect(worker.output()).toMatch(
      /"settle worker: database tls: verify-full, server certificate verified \(CA from sslrootcert, host name 127\.0\.0\.1\)"/,
    );
    expect(worker.output()).toMatch(/"settle worker: temporal tls: none \(a loopback server\)"/);
    expect(worker.output()).toMatch(/"settle worker: clock: -?\d+ ms from the database’s/);

    // A trajectory through it: its record is written over TLS.
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const settle = new SettleClient(new Client({ connection }), taskQueue);
      const ws = tempWorkspace('tls');
      const file = path.join(ws, 'a.txt');
      fs.writeFileSync(file, 'v1\n');
      const id = uniqueId('tls');
      await settle.start(id, {
        workspace: ws,
        turns: [{ turn: 0, calls: [{ call_id: 'e', tool: 'file_edit', args: { path: file, old_str: 'v1', new_str: 'v2' } }] }],
      });
      expect((await settle.result(id)).calls.map((c) => c.resolution)).toEqual(['executed']);

      const records = await runSettle(['records', '--trajectory', id], { env: env(verified) });
      expect(records.stderr).toBe('');
      expect(records.stdout).toContain('COMPLETED');
      const status = await runSettle(['status', id], { env: { ...env(verified), TEMPORAL_TASK_QUEUE: taskQueue } });
      expect(status.code).toBe(0);
      expect(status.stdout).toContain('COMPLETED');
    } finally {
      await connection.close();
    }

    const doctor = await runSettle(['doctor'], { env: env(verified) });
    expect(doctor.stdout).toMatch(
      /^ok {3}database tls: verify-full, server certificate verified \(CA from sslrootcert, host name 127\.0\.0\.1\)$/m,
    );
    expect(doctor.stdout).toMatch(/^ok {3}clock: -?\d+ ms from the database’s \(±\d+ ms\), within 1 s/m);
    expect(doctor.code).toBe(0);

    const db = openDatabase(verified, { max: 1 });
    try {
      const { rows } = await sql<{ ssl: boolean }>`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`.execute(db);
      expect(rows[0]?.ssl).toBe(true);
    } finally {
      await db.destroy();
    }
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });

  it("reads sslmode as pg does: require verifies like verify-full; with uselibpqcompat=true it does not (doctor's rule, core/database-tls.ts)", async () => {
    const require = withParams(server.url, { sslmode: 'require', sslrootcert: otherCa.certFile });
    expect(readDatabaseTls(require).verification).toBe('full');
    await expect(assertReachable(require)).rejects.toThrow(/unable to verify the first certificate/);
    const libpq = withParams(server.url, { sslmode: 'require', uselibpqcompat: 'true' });
    expect(readDatabaseTls(libpq).verification).toBe('unverified');
    await assertReachable(libpq);
    const caOnly = withParams(server.url.replace('127.0.0.1', '127.0.0.2'), {
      sslmode: 'verify-ca',
      sslrootcert: ca.certFile,
      uselibpqcompat: 'true',
    });
    expect(readDatabaseTls(caOnly).verification).toBe('ca-only');
    await assertReachable(caOnly);
  });

  const refusals = [
    {
      what: 'a CA that did not sign the server certificate',
      url: () => withParams(server.url, { sslmode: 'verify-full', sslrootcert: otherCa.certFile }),
      cause: /unable to verify the first certificate/,
      fix: /the server's certificate is not signed by a trusted CA: set sslrootcert=/,
    },
    {
      what: 'a host name the certificate does not hold',
      url: () => withParams(server.url.replace('127.0.0.1', '127.0.0.2'), { sslmode: 'verify-full', sslrootcert: ca.certFile }),
      cause: /IP: 127\.0\.0\.2 is not in the cert's list: 127\.0\.0\.1/,
      fix: /connect by a host name or address the server's certificate names/,
    },
    {
      what: 'a server without TLS (no plaintext fallback)',
      url: () => withParams(inject('databaseUrl'), { sslmode: 'verify-full', sslrootcert: ca.certFile }),
      cause: /The server does not support SSL connections/,
      fix: /the server refused TLS and settle never falls back to plaintext/,
    },
  ];

  for (const { what, url, cause, fix } of refusals) {
    it(`refuses ${what} in one line: worker start, settle records, settle doctor`, async () => {
      const worker = startWorkerProcess(WORKER, { ...env(url()), SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath') });
      expect(await worker.exited).toBe(1);
      const errorLines = worker
        .output()
        .split('\n')
        .filter((l) => l.includes('"level":"error"'));
      expect(errorLines).toHaveLength(1);
      expect(errorLines[0]).toMatch(cause);
      expect(errorLines[0]).toMatch(fix);
      expect(worker.output()).not.toContain('waiting for the database');

      const records = await runSettle(['records'], { env: env(url()) });
      expect(records.code).not.toBe(0);
      expect(records.stderr.trim().split('\n')).toHaveLength(1);
      expect(records.stderr).toMatch(cause);

      const doctor = await runSettle(['doctor'], { env: env(url()) });
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toMatch(new RegExp(`^FAIL database: .* refused over TLS \\(.*\\): `, 'm'));
      expect(doctor.stdout).toMatch(cause);
      expect(doctor.stdout).toMatch(fix);
    });
  }
});
