/**
 * The Prometheus endpoint of a worker process (and of `settle dev`): GET /metrics answers settle's
 * own metrics (activities/observability/metrics.ts) followed by Temporal's runtime metrics, which
 * the Core SDK serves on a loopback port of its own (workers/runtime.ts) and this server relays,
 * so one scrape target has both.
 *
 *   SETTLE_METRICS_PORT  port to listen on (0: any free port; unset: no endpoint)
 *   SETTLE_METRICS_HOST  address to bind (default 127.0.0.1; e.g. 0.0.0.0 for a scraper on
 *                        another host, which then reaches it unauthenticated)
 *
 * The endpoint has no authentication: it listens on loopback unless the operator widens it, and
 * the installation's gauges (records by state, the oldest IN_DOUBT record, the oldest waits for
 * an approval and for an operator) come from a cache refreshed at most once per GAUGE_MAX_AGE_MS,
 * whatever the scrape rate — and only from the one process that holds the exporter lock
 * (gauge-exporter.ts); the others serve their counters and `settle_gauge_exporter 0`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { sql } from 'kysely';
import { openDatabase } from '../activities/store/database';
import { registerWorkerService } from '../activities/tools/egress-policy';
import type { SettleMetrics } from '../activities/observability/metrics';
import type { TemporalTarget } from '../client/connection';
import { errorMessage } from '../core/errors';
import { GaugeExporterLock } from './gauge-exporter';
import { oldestWaits } from './oldest-waits';

/** How long database-wide gauges are served from the cache before a scrape refreshes them. */
export const GAUGE_MAX_AGE_MS = 15_000;
const DEFAULT_HOST = '127.0.0.1';

export interface MetricsServerOptions {
  port: number;
  /** Address to bind; default 127.0.0.1. */
  host?: string;
  /** Default GAUGE_MAX_AGE_MS. */
  gaugeMaxAgeMs?: number;
  metrics: SettleMetrics;
  /** Where the Core SDK serves Temporal's runtime metrics (loopback), if installed with them. */
  temporalMetricsUrl: string | null;
  /** For gauges read at scrape time: records by state (Postgres), trajectories awaiting approval (visibility). */
  databaseUrl: string;
  target: TemporalTarget;
  /** The exporter lock's number (gauge-exporter.ts; default EXPORTER_LOCK_KEY): tests sharing one database use their own. */
  exporterLockKey?: bigint;
}

export interface MetricsServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

/** The metrics port from SETTLE_METRICS_PORT, or null when unset; an invalid value is refused naming the rule. */
export function metricsPortFromEnv(env: NodeJS.ProcessEnv = process.env): number | null {
  const value = env.SETTLE_METRICS_PORT;
  if (value === undefined || value === '') return null;
  if (!/^\d+$/.test(value) || Number(value) > 65_535) {
    throw new Error(`SETTLE_METRICS_PORT: must be a port number from 0 to 65535 (got ${JSON.stringify(value)})`);
  }
  return Number(value);
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const host = options.host ?? DEFAULT_HOST;
  const db = openDatabase(options.databaseUrl, { max: 1 });
  let client: Promise<Client> | null = null;
  const temporalClient = () =>
    (client ??= Connection.connect(options.target.connectionOptions).then(
      (connection) => new Client({ connection, namespace: options.target.namespace }),
    ));

  const exporter = new GaugeExporterLock(options.databaseUrl, options.exporterLockKey);
  // Whether the last refresh reached Postgres (null before the first), and whether this process
  // exported the gauges then: an exporter cut off from the database keeps serving its last values
  // (no other process can take the lock meanwhile), so an age alert does not go blind.
  let recordStoreUp: boolean | null = null;
  let exportedLast = false;
  const refreshGauges = async () => {
    try {
      const held = await exporter.held();
      if (held) await readRecordGauges();
      exportedLast = held;
      recordStoreUp = true;
    } catch (err) {
      recordStoreUp = false;
      throw err;
    }
    if (!exportedLast) return;
    const metrics = options.metrics;
    const temporal = await temporalClient();
    const [approvals, operator] = await Promise.all([oldestWaits(temporal, 'approval'), oldestWaits(temporal, 'operator')]);
    metrics.approvalsPending.set({}, approvals.trajectories);
    metrics.oldestApproval.set({}, approvals.oldestAgeSeconds);
    metrics.operatorWaits.set({}, operator.trajectories);
    metrics.oldestOperatorWait.set({}, operator.oldestAgeSeconds);
  };
  const readRecordGauges = async () => {
    const metrics = options.metrics;
    const rows = await db
      .selectFrom('settle_endpoint_records')
      .select(['state', sql<string>`count(*)`.as('n')])
      .groupBy('state')
      .execute();
    for (const state of ['IN_FLIGHT', 'COMPLETED', 'IN_DOUBT', 'NOT_EXECUTED']) {
      metrics.inDoubtRecords.set({ state }, Number(rows.find((r) => r.state === state)?.n ?? 0));
    }
    const { rows: settlements } = await sql<{ state: string; settlements: string }>`
      SELECT state, settlements FROM settle_operator_settlement_counts`.execute(db);
    for (const state of ['COMPLETED', 'NOT_EXECUTED']) {
      metrics.operatorSettlements.set({ state }, Number(settlements.find((r) => r.state === state)?.settlements ?? 0));
    }
    // The database's clock, as for leases: a worker's clock skew cannot age a record.
    const { age, since } = await db
      .selectFrom('settle_endpoint_records')
      .where('state', '=', 'IN_DOUBT')
      .select([
        sql<string | null>`extract(epoch from now() - min(updated_at))`.as('age'),
        sql<string | null>`extract(epoch from min(updated_at))`.as('since'),
      ])
      .executeTakeFirstOrThrow();
    metrics.oldestInDoubt.set({}, Math.max(0, Number(age ?? 0)));
    metrics.oldestInDoubtSince.set({}, Number(since ?? 0));
    // A lapsed lease nothing swept (no worker's sweeper runs): unknown since the lease expired, as IN_DOUBT would be.
    const { lapsed } = await db
      .selectFrom('settle_endpoint_records')
      .where('state', '=', 'IN_FLIGHT')
      .where('lease_until', '<', sql<Date>`now()`)
      .select(sql<string | null>`extract(epoch from now() - min(lease_until))`.as('lapsed'))
      .executeTakeFirstOrThrow();
    metrics.oldestLapsedLease.set({}, Math.max(0, Number(lapsed ?? 0)));
  };

  // One refresh at a time, and none while the last one is younger than the maximum age: the
  // cache answers every scrape in between. A failed refresh is retried by the next scrape.
  const maxAgeMs = options.gaugeMaxAgeMs ?? GAUGE_MAX_AGE_MS;
  let refreshing: Promise<void> | null = null;
  let refreshedAt = -Infinity;
  const cachedGauges = (): Promise<void> => {
    if (refreshing) return refreshing;
    if (Date.now() - refreshedAt < maxAgeMs) return Promise.resolve();
    refreshing = withTimeout(refreshGauges(), 5_000)
      .then(() => void (refreshedAt = Date.now()))
      .finally(() => (refreshing = null));
    return refreshing;
  };

  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    void (async () => {
      // A gauge that cannot be read now keeps its last value; the scrape still answers.
      const gaugeError = await cachedGauges().then(
        () => null,
        (err: unknown) => errorMessage(err),
      );
      const temporal = options.temporalMetricsUrl
        ? await withTimeout(
            fetch(options.temporalMetricsUrl).then((r) => r.text()),
            5_000,
          ).catch(() => '')
        : '';
      const exporting = exporter.exporting || (recordStoreUp === false && exportedLast);
      const body =
        options.metrics.render({ installationGauges: exporting }) +
        `# HELP settle_gauge_exporter Whether this process reports the installation's gauges (one process at a time does).\n# TYPE settle_gauge_exporter gauge\nsettle_gauge_exporter ${exporting ? 1 : 0}\n` +
        `# HELP settle_metrics_gauge_errors Whether the last scrape could not refresh settle's gauges.\n# TYPE settle_metrics_gauge_errors gauge\nsettle_metrics_gauge_errors ${gaugeError ? 1 : 0}\n` +
        (recordStoreUp === null
          ? ''
          : `# HELP settle_record_store_up Whether this process reached the record store (Postgres) at its last gauge refresh.\n# TYPE settle_record_store_up gauge\nsettle_record_store_up ${recordStoreUp ? 1 : 0}\n`) +
        temporal;
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(body);
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  registerWorkerService(host, port); // never reachable through a sandbox's egress proxy
  return {
    port,
    url: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await exporter.close();
      await db.destroy();
      if (client) await (await client).connection.close().catch(() => {});
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref())]);
}
