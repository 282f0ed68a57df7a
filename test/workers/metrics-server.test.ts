/**
 * The metrics endpoint is unauthenticated, so it listens on loopback unless the operator widens it
 * (SETTLE_METRICS_HOST), and its database-wide gauges come from a cache: scrapes, however many,
 * cannot make it count every record each time.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import net from 'node:net';
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

/** This machine's first address that is not loopback: where a neighbour on the network would connect. */
function externalAddress(): string {
  const address = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && !a.internal && a.family === 'IPv4')?.address;
  expect(address, 'a non-loopback IPv4 address on this machine').toBeDefined();
  return address!;
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

function inFlightRecords(text: string): number {
  return Number(/^settle_records\{state="IN_FLIGHT"\} (\d+)$/m.exec(text)?.[1]);
}

describe('metrics endpoint', () => {
  it('listens on loopback by default: not reachable at the machine’s network address, unless the operator widens it', async () => {
    const local = await start();
    expect(local.url).toBe(`http://127.0.0.1:${local.port}/metrics`);
    expect(await connects('127.0.0.1', local.port)).toBe(true);
    expect(await connects(externalAddress(), local.port)).toBe(false);

    const wide = await start({ host: '0.0.0.0' });
    expect(await connects(externalAddress(), wide.port)).toBe(true);
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
