/**
 * The record-store check at worker start (workers/record-store-check.ts) against real PostgreSQL 15
 * topologies: a standalone primary, a primary with a streaming replica attached asynchronously,
 * and the same replica made a synchronous standby. The worker's connection is settle's own
 * unprivileged role, as in production.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRecordStoreAtStart, RecordStoreRefused } from '../../workers/record-store-check';
import type { Worker } from '@temporalio/worker';
import { createSettleWorker } from '../../workers/create-worker';
import { SettlePlugin } from '../../workers/settle-plugin';
import { asAdmin, setSynchronousStandbyNames, startPrimary, startStandby, waitFor, type Pg15Server } from '../../chaos/infra/postgres15';

let primary: Pg15Server;
let standby: Pg15Server | undefined;

beforeAll(async () => {
  primary = await startPrimary();
});
afterAll(async () => {
  await standby?.stop();
  await primary?.stop();
});

const check = async (url: string, env: NodeJS.ProcessEnv = {}) => {
  const lines: string[] = [];
  const outcome: { pooling?: string; error?: Error } = await checkRecordStoreAtStart(url, (l) => lines.push(l), env).then(
    (pooling) => ({ pooling }),
    (err: Error) => ({ error: err }),
  );
  return { ...outcome, lines };
};

describe('record store check at worker start (PostgreSQL 15)', { timeout: 120_000 }, () => {
  it('accepts a standalone primary (fsync on, no replica) without a word, through a direct connection', async () => {
    expect(await check(primary.url)).toEqual({ pooling: 'session', lines: [] });
  });

  it('refuses a primary with an asynchronous streaming replica, naming the setting; SETTLE_RECORD_DURABILITY=local starts with a warning', async () => {
    standby = await startStandby(primary, 'replica1');
    const refused = await check(primary.url);
    expect(refused.error).toBeInstanceOf(RecordStoreRefused);
    expect(refused.error?.message).toMatch(
      /^refused to start: record store: 1 streaming replica \(replica1: mode not visible\) attached asynchronously \(synchronous_standby_names is empty\): .*set synchronous_standby_names on the primary .*, or set SETTLE_RECORD_DURABILITY=local to accept it$/,
    );
    expect(refused.lines).toEqual([]); // the refusal is the error, not a warning besides it

    const accepted = await check(primary.url, { SETTLE_RECORD_DURABILITY: 'local' });
    expect(accepted.pooling).toBe('session');
    expect(accepted.lines).toEqual([
      expect.stringMatching(/^settle worker: WARNING: record store: 1 streaming replica .*\(accepted: SETTLE_RECORD_DURABILITY=local\)$/),
    ]);

    // A role that may read replication state (pg_monitor) sees the replica's name and mode.
    await asAdmin(primary.adminUrl, (c) => c.query('GRANT pg_monitor TO settle'));
    try {
      expect((await check(primary.url)).error?.message).toMatch(
        /1 streaming replica \(replica1: async\) attached asynchronously.*'ANY 1 \(replica1\)'/,
      );
    } finally {
      await asAdmin(primary.adminUrl, (c) => c.query('REVOKE pg_monitor FROM settle'));
    }
  });

  it("createSettleWorker refuses with the record store's failure, whatever Temporal answers; the opt-out passes the check", async () => {
    const options = { databaseUrl: primary.url, temporal: { address: '127.0.0.1:1' }, warn: () => {} };
    await expect(createSettleWorker(options)).rejects.toBeInstanceOf(RecordStoreRefused);
    process.env.SETTLE_RECORD_DURABILITY = 'local';
    try {
      const err = await createSettleWorker(options).catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(RecordStoreRefused); // it went on, to the (absent) Temporal server
    } finally {
      delete process.env.SETTLE_RECORD_DURABILITY;
    }
  });

  it('SettlePlugin refuses in its run context, before the migrations and before the worker runs', async () => {
    const plugin = new SettlePlugin({ databaseUrl: primary.url, warn: () => {} });
    let ran = false;
    const run = plugin.runWorker({} as Worker, async () => {
      ran = true;
    });
    await expect(run).rejects.toBeInstanceOf(RecordStoreRefused);
    expect(ran).toBe(false);
    const tables = await asAdmin(primary.adminUrl, (c) => c.query("SELECT to_regclass('kysely_migration') AS t"));
    expect(tables.rows[0]).toEqual({ t: null });
  });

  it('accepts the replica once it is a synchronous standby (synchronous_standby_names, synchronous_commit on)', async () => {
    await setSynchronousStandbyNames(primary, 'ANY 1 (replica1)');
    await waitFor(primary.adminUrl, "SELECT 1 FROM pg_stat_replication WHERE application_name = 'replica1' AND sync_state = 'quorum'");
    expect(await check(primary.url)).toEqual({ pooling: 'session', lines: [] });

    // synchronous_commit = local for settle's role: commits stop waiting for the standby; refused again.
    await asAdmin(primary.adminUrl, (c) => c.query('ALTER ROLE settle SET synchronous_commit = local'));
    try {
      expect((await check(primary.url)).error?.message).toMatch(/synchronous_commit = local for settle’s role: commits do not wait/);
    } finally {
      await asAdmin(primary.adminUrl, (c) => c.query('ALTER ROLE settle RESET synchronous_commit'));
    }
  });

  it('refuses a connection to the standby: it cannot record a claim, whatever the opt-out', async () => {
    const url = standby!.url;
    const { error } = await check(url, { SETTLE_RECORD_DURABILITY: 'none' });
    expect(error?.message).toMatch(/DATABASE_URL reaches a standby \(pg_is_in_recovery\(\) is true\).*point DATABASE_URL at the primary$/);
  });
});
