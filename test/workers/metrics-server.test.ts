/**
 * The metrics endpoint is unauthenticated, so it listens on loopback unless the operator widens it
 * (SETTLE_METRICS_HOST), and its database-wide gauges come from a cache: scrapes, however many,
 * cannot make it count every record each time.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startMetricsServer, type MetricsServer } from '../../workers/metrics-server';
import { SettleMetrics } from '../../activities/observability/metrics';
import { loadTemporalTarget } from '../../client/connection';
import { openTestDb, testStore, uniqueId } from '../support/env';

const db = openTestDb(1);
const store = testStore(db);
const servers: MetricsServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
  await db.destroy();
});

async function start(options: { host?: string; gaugeMaxAgeMs?: number } = {}): Promise<MetricsServer> {
  const server = await startMetricsServer({
    port: 0,
    ...options,
    metrics: new SettleMetrics(),
    temporalMetricsUrl: null,
    databaseUrl: inject('databaseUrl'),
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
    const scrape = async (s: MetricsServer) => (await fetch(s.url)).text();
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
});
