/**
 * The metrics endpoint is unauthenticated, so it listens on loopback unless the operator widens it
 * (SETTLE_METRICS_HOST), and its database-wide gauges come from a cache: scrapes, however many,
 * cannot make it count every record each time.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startMetricsServer, type MetricsServer } from '../../workers/metrics-server';
import { SettleMetrics } from '../../activities/observability/metrics';
import { LeaseSweeper } from '../../activities/settled/lease-sweeper';
import { loadTemporalTarget } from '../../client/connection';
import { sql } from 'kysely';
import { openTestDb, testStore, uniqueId } from '../support/env';

const db = openTestDb(1);
const store = testStore(db);
const servers: MetricsServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
  await db.destroy();
});

/** A lock number of this test's own: other files' workers share the database (and the default lock). */
const ownLock = () => BigInt(crypto.randomInt(1, 2 ** 47));

async function start(
  options: { host?: string; gaugeMaxAgeMs?: number; exporterLockKey?: bigint; databaseUrl?: string } = {},
): Promise<MetricsServer> {
  const server = await startMetricsServer({
    port: 0,
    exporterLockKey: ownLock(),
    databaseUrl: inject('databaseUrl'),
    ...options,
    metrics: new SettleMetrics(),
    temporalMetricsUrl: null,
    target: loadTemporalTarget({ address: inject('temporalAddress') }),
  });
  servers.push(server);
  return server;
}

/**
 * The addresses the kernel has a listening TCP socket on for `port` (from /proc/net/tcp and tcp6):
 * what a neighbour on the network could reach, read without sending it any traffic.
 */
function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (!local || state !== '0A') continue; // 0A: LISTEN
      const [hex, portHex] = local.split(':') as [string, string];
      if (parseInt(portHex, 16) !== port) continue;
      found.push(hex.length === 8 ? ipv4(hex) : hex === '0'.repeat(32) ? '::' : hex);
    }
  }
  return found;
}

/** /proc/net/tcp's little-endian hex IPv4 address as dotted quad. */
function ipv4(hex: string): string {
  return [3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.');
}

function inFlightRecords(text: string): number {
  return Number(/^settle_records\{state="IN_FLIGHT"\} (\d+)$/m.exec(text)?.[1]);
}

/** One unlabelled sample's value, or undefined when the series is absent. */
function value(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

const scrape = async (s: MetricsServer) => (await fetch(s.url)).text();

describe('metrics endpoint', () => {
  it('listens on loopback by default, not on the machine’s network addresses, unless the operator widens it', async () => {
    const local = await start();
    expect(local.url).toBe(`http://127.0.0.1:${local.port}/metrics`);
    expect(listeningAddresses(local.port)).toEqual(['127.0.0.1']);
    expect((await fetch(local.url)).status).toBe(200);

    const wide = await start({ host: '0.0.0.0' });
    expect(listeningAddresses(wide.port)).toEqual(['0.0.0.0']);
  });

  it('serves the database-wide gauges from a cache, refreshed at most once per interval', async () => {
    const cached = await start({ gaugeMaxAgeMs: 3_600_000 });
    const fresh = await start({ gaugeMaxAgeMs: 0 });
    const before = inFlightRecords(await scrape(cached));

    const key = crypto.randomBytes(32).toString('hex');
    const claimed = await store.claim(
      { key, trajectoryId: uniqueId('metrics'), turn: 0, callId: 'c', tool: 'file_edit', args: {} },
      { leaseMs: 60_000, holder: 'metrics-test' },
    );
    expect(claimed.kind).toBe('claimed');
    expect(inFlightRecords(await scrape(fresh))).toBeGreaterThanOrEqual(before + 1);
    // Many scrapes within the interval: the same cached value, no count of every record each time.
    const again = await Promise.all(Array.from({ length: 20 }, () => scrape(cached)));
    expect(new Set(again.map(inFlightRecords))).toEqual(new Set([before]));
  });

  it('reports the installation’s gauges from one process at a time, and another takes over when it stops', async () => {
    const exporterLockKey = ownLock();
    const a = await start({ gaugeMaxAgeMs: 0, exporterLockKey });
    const b = await start({ gaugeMaxAgeMs: 0, exporterLockKey });
    const [textA, textB] = [await scrape(a), await scrape(b)];
    const [exporting, other] = value(textA, 'settle_gauge_exporter') === 1 ? [a, b] : [b, a];
    const [exportingText, otherText] = exporting === a ? [textA, textB] : [textB, textA];
    expect(value(exportingText, 'settle_gauge_exporter')).toBe(1);
    expect(value(otherText, 'settle_gauge_exporter')).toBe(0);
    // The other serves its own counters, and none of the installation's gauges (no second copy to sum).
    expect(otherText).toMatch(/^# TYPE settle_claims_total counter$/m);
    for (const gauge of ['settle_records', 'settle_oldest_in_doubt_age_seconds', 'settle_oldest_approval_wait_age_seconds']) {
      expect(otherText).not.toMatch(new RegExp(`^${gauge}[{ ]`, 'm'));
      expect(exportingText).toMatch(new RegExp(`^${gauge}[{ ]`, 'm'));
    }
    // Its process gone (here: its server closed, which ends its lock's connection), the other exports.
    await exporting.close();
    servers.splice(servers.indexOf(exporting), 1);
    const after = await scrape(other);
    expect(value(after, 'settle_gauge_exporter')).toBe(1);
    expect(inFlightRecords(after)).toBeGreaterThanOrEqual(0);
  });

  it('an exporter cut off from Postgres keeps serving its last gauges and says the record store is unreachable', async () => {
    // The worker reaches Postgres through a link this test can cut, as a network partition would.
    const real = new URL(inject('databaseUrl'));
    const sockets = new Set<net.Socket>();
    const link = net.createServer((client) => {
      const upstream = net.connect(Number(real.port), real.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => link.listen(0, '127.0.0.1', resolve));
    const linkPort = (link.address() as net.AddressInfo).port;
    const viaLink = new URL(real);
    viaLink.port = String(linkPort);
    const server = await start({ gaugeMaxAgeMs: 0, databaseUrl: viaLink.toString() });
    try {
      const up = await scrape(server);
      expect(value(up, 'settle_record_store_up')).toBe(1);
      expect(value(up, 'settle_gauge_exporter')).toBe(1);
      const since = value(up, 'settle_oldest_in_doubt_since_timestamp_seconds');
      expect(since).toBeDefined();

      await new Promise<void>((resolve) => {
        link.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      const cut = await scrape(server);
      expect(value(cut, 'settle_record_store_up')).toBe(0);
      expect(value(cut, 'settle_metrics_gauge_errors')).toBe(1);
      // Still the exporter, with the values it read last: no other process can take over meanwhile.
      expect(value(cut, 'settle_gauge_exporter')).toBe(1);
      expect(value(cut, 'settle_oldest_in_doubt_since_timestamp_seconds')).toBe(since);
      expect(cut).toMatch(/^settle_records\{state="IN_DOUBT"\} \d+$/m);

      await new Promise<void>((resolve) => link.listen(linkPort, '127.0.0.1', resolve));
      expect(value(await scrape(server), 'settle_record_store_up')).toBe(1);
    } finally {
      link.close();
      for (const s of sockets) s.destroy();
    }
  });

  it('ages the oldest IN_DOUBT record on the database clock', async () => {
    const server = await start({ gaugeMaxAgeMs: 0 });
    const key = crypto.randomBytes(32).toString('hex');
    const claimed = await store.claim(
      { key, trajectoryId: uniqueId('metrics-age'), turn: 0, callId: 'c', tool: 'file_edit', args: {} },
      { leaseMs: 60_000, holder: 'metrics-test' },
    );
    if (claimed.kind !== 'claimed') throw new Error(`not claimed: ${claimed.kind}`);
    expect((await store.markInDoubt(key, claimed.generation, 'test: effect unknown', 'worker:metrics-test')).ok).toBe(true);
    // Two hours in doubt: older than anything another test leaves behind in this run.
    await sql`UPDATE settle_endpoint_records SET updated_at = now() - interval '2 hours' WHERE key = ${key}`.execute(db);
    const age = value(await scrape(server), 'settle_oldest_in_doubt_age_seconds')!;
    expect(age).toBeGreaterThanOrEqual(7_200);
    expect(age).toBeLessThan(7_200 + 600);
    await store.settle(key, claimed.generation, { as: 'NOT_EXECUTED' }, 'operator:metrics-test', 'test: settled');
    expect(value(await scrape(server), 'settle_oldest_in_doubt_age_seconds')!).toBeLessThan(7_200);
  });

  it('ages a lapsed lease, and the IN_DOUBT record it becomes, from the lease’s expiry, not from the sweep or the claim that noticed', async () => {
    const server = await start({ gaugeMaxAgeMs: 0 });
    const lapsed = async (label: string) => {
      const key = crypto.randomBytes(32).toString('hex');
      const claimed = await store.claim(
        { key, trajectoryId: uniqueId(label), turn: 0, callId: 'c', tool: 'file_edit', args: {} },
        { leaseMs: 60_000, holder: 'metrics-test' },
      );
      if (claimed.kind !== 'claimed') throw new Error(`not claimed: ${claimed.kind}`);
      // Its holder died three hours ago: older than anything another test leaves behind in this run.
      await sql`UPDATE settle_endpoint_records SET lease_until = now() - interval '3 hours', updated_at = now() - interval '3 hours 1 minute' WHERE key = ${key}`.execute(
        db,
      );
      return key;
    };
    const swept = await lapsed('metrics-lapsed-sweep');
    const reclaimed = await lapsed('metrics-lapsed-claim');
    // While nothing has swept them, the lapsed-lease gauge ages them (a row lock keeps any running sweeper off them meanwhile).
    await db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM settle_endpoint_records WHERE key IN (${swept}, ${reclaimed}) FOR UPDATE`.execute(trx);
      const age = value(await scrape(server), 'settle_oldest_lapsed_lease_age_seconds')!;
      expect(age).toBeGreaterThanOrEqual(10_800);
      expect(age).toBeLessThan(10_800 + 600);
    });
    // One turned IN_DOUBT by a sweep (a sweeper that takes only leases lapsed over two hours: these), the other by a new claim.
    expect(await new LeaseSweeper(store, { identity: 'metrics-test', graceMs: 7_200_000 }).sweepOnce()).toBeGreaterThanOrEqual(1);
    const { trajectoryId } = (await store.get(reclaimed))!;
    const again = await store.claim(
      { key: reclaimed, trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args: {} },
      { leaseMs: 60_000, holder: 'metrics-test-2' },
    );
    expect(again.kind).toBe('in_doubt');
    for (const key of [swept, reclaimed]) {
      const record = (await store.get(key))!;
      expect(record.state).toBe('IN_DOUBT');
      // Unknown since the lease expired (three hours ago), not since now.
      expect(Date.now() - record.updatedAt.getTime()).toBeGreaterThanOrEqual(10_790_000);
    }
    const age = value(await scrape(server), 'settle_oldest_in_doubt_age_seconds')!;
    expect(age).toBeGreaterThanOrEqual(10_800);
    expect(age).toBeLessThan(10_800 + 600);
    for (const key of [swept, reclaimed]) {
      const record = (await store.get(key))!;
      await store.settle(key, record.generation, { as: 'NOT_EXECUTED' }, 'operator:metrics-test', 'test: settled');
    }
  });
});
