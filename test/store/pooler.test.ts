/**
 * settle behind a real PgBouncer in front of a real PostgreSQL 15: the pooler's mode is detected
 * (session and transaction work, statement is refused), and behind transaction pooling nothing
 * relies on session state — migrations and the gauge exporter hold transaction-scoped advisory
 * locks, and the endpoint store's statements run unnamed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectPooling } from '../../activities/store/record-store-settings';
import { migrateToLatest, openDatabase, useUnnamedStatements } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { deriveKey } from '../../core/key';
import { EXPORTER_APPLICATION_NAME, GaugeExporterLock } from '../../workers/gauge-exporter';
import { checkRecordStoreAtStart } from '../../workers/record-store-check';
import { asAdmin, startPgBouncer, startPrimary, type PgBouncer, type Pg15Server } from '../../chaos/infra/postgres15';

let primary: Pg15Server;
const bouncers: Partial<Record<'session' | 'transaction' | 'statement', PgBouncer>> = {};

beforeAll(async () => {
  primary = await startPrimary();
  for (const mode of ['session', 'transaction', 'statement'] as const) bouncers[mode] = await startPgBouncer(primary, mode);
});
afterAll(async () => {
  for (const b of Object.values(bouncers)) await b?.stop();
  await primary?.stop();
});

/** Advisory locks held anywhere in the cluster, read directly (not through the pooler). */
const advisoryLocks = () =>
  asAdmin(primary.adminUrl, async (c) => (await c.query("SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted")).rowCount);

describe('PgBouncer in front of PostgreSQL 15', { timeout: 120_000 }, () => {
  it('tells the modes apart: direct and session keep a server session, transaction shares it, statement refuses transactions', async () => {
    expect(await detectPooling(primary.url)).toBe('session');
    expect(await detectPooling(bouncers.session!.url)).toBe('session');
    expect(await detectPooling(bouncers.transaction!.url)).toBe('transaction');
    expect(await detectPooling(bouncers.statement!.url)).toBe('statement');
  });

  it('starts a worker behind transaction mode (saying so) and refuses statement mode, pointing at pool_mode', async () => {
    const lines: string[] = [];
    expect(await checkRecordStoreAtStart(bouncers.transaction!.url, (l) => lines.push(l), {})).toBe('transaction');
    expect(lines).toEqual([
      expect.stringMatching(/^settle worker: pooler: transaction mode .*transaction-scoped locks and unnamed statements/),
    ]);
    await expect(checkRecordStoreAtStart(bouncers.statement!.url, () => {}, {})).rejects.toThrow(
      /^refused to start: pooler: statement mode .*set pool_mode = transaction or session for settle’s database$/,
    );
  });

  it('migrates through transaction mode, four migrators at once, and leaves no advisory lock behind', async () => {
    const url = bouncers.transaction!.url;
    const applied = await Promise.all(Array.from({ length: 4 }, () => migrateToLatest(url)));
    expect(applied.flat()).toContain('0001_endpoint_records'); // applied once, by whichever came first
    expect(applied.flat().filter((m) => m === '0001_endpoint_records')).toHaveLength(1);
    expect(await migrateToLatest(url)).toEqual([]);
    expect(await advisoryLocks()).toBe(0);
  });

  it('runs the endpoint store through transaction mode with unnamed statements, across many connections', async () => {
    const db = openDatabase(bouncers.transaction!.url, { max: 8 });
    useUnnamedStatements(db);
    const store = new EndpointStore(db);
    try {
      const calls = Array.from({ length: 40 }, (_, i) => {
        const args = { n: i };
        const trajectoryId = `pooler-${i}`;
        return {
          key: deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args }),
          trajectoryId,
          turn: 0,
          callId: 'c',
          tool: 'file_edit',
          args,
        };
      });
      const claims = await Promise.all(calls.map((c) => store.claim(c, { leaseMs: 30_000, holder: 'w' })));
      expect(claims.every((c) => c.kind === 'claimed')).toBe(true);
      const done = await Promise.all(calls.map((c) => store.complete(c.key, 1, { ok: true }, 'worker:w')));
      expect(done.every((d) => d.ok)).toBe(true);
      const again = await Promise.all(calls.map((c) => store.claim(c, { leaseMs: 30_000, holder: 'w2' })));
      expect(again.every((c) => c.kind === 'completed')).toBe(true);
    } finally {
      await db.destroy();
    }
  });

  it('elects one gauge exporter through transaction mode, and hands over when it closes or its connection dies', async () => {
    const url = bouncers.transaction!.url;
    const key = 4_242_001n;
    const [a, b] = [new GaugeExporterLock(url, key), new GaugeExporterLock(url, key)];
    try {
      expect(await a.held()).toBe(true);
      expect(await b.held()).toBe(false);
      expect(await a.held()).toBe(true); // still its own, statements later
      expect(await advisoryLocks()).toBe(1);
      // The holder's server session, named, idle in its transaction (exempt from idle_in_transaction_session_timeout).
      const sessions = await asAdmin(primary.adminUrl, (c) =>
        c.query<{ state: string }>('SELECT state FROM pg_stat_activity WHERE application_name = $1', [EXPORTER_APPLICATION_NAME]),
      );
      expect(sessions.rows.map((r) => r.state)).toContain('idle in transaction');
      await a.close();
      expect(await b.held()).toBe(true);

      // A worker that dies (its socket simply gone): PgBouncer ends the server session, and the lock with it.
      const socket = (b as unknown as { client: { connection: { stream: { destroy(): void } } } }).client.connection.stream;
      socket.destroy();
      let taken = false;
      for (let i = 0; i < 50 && !taken; i++) {
        taken = await a.held();
        if (!taken) await new Promise((r) => setTimeout(r, 100));
      }
      expect(taken).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
    expect(await advisoryLocks()).toBe(0);
  });
});
