/**
 * The metrics ports of `settle dev`'s workers, and a Prometheus file_sd file naming them
 * (`.settle/prometheus-targets.json`): point `file_sd_configs` at it and every worker is scraped,
 * on the same port after a restart. Removed when settle dev stops (Prometheus then drops the targets).
 */
import fs from 'node:fs';
import path from 'node:path';
import { SETTLE_DIR } from '../stack/paths';
import { freePorts } from '../stack/ports';

export const SCRAPE_TARGETS_FILE = path.join(SETTLE_DIR, 'prometheus-targets.json');

/** Where the workers' metrics endpoints listen (SETTLE_METRICS_HOST, as workers/metrics-server.ts binds; default loopback). */
export function metricsHost(): string {
  const host = process.env.SETTLE_METRICS_HOST;
  // A wildcard bind is reached on loopback from this host.
  return !host || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

/**
 * One port per worker slot, fixed for the life of settle dev: SETTLE_METRICS_PORT=BASE gives worker
 * i the port BASE+i; 0 gives each a free port chosen once, at start.
 */
export async function workerMetricsPorts(base: number, count: number, host = '127.0.0.1'): Promise<number[]> {
  if (base === 0) return freePorts(count, host);
  const ports = Array.from({ length: count }, (_, i) => base + i);
  if (ports.at(-1)! > 65_535) {
    throw new Error(`SETTLE_METRICS_PORT: must leave room for ${count} workers (BASE+${count - 1} ≤ 65535; got ${base})`);
  }
  return ports;
}

/** Written atomically (a rename), as file_sd expects: Prometheus never reads half a file. */
export function writeScrapeTargets(targets: string[], file = SCRAPE_TARGETS_FILE): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const group = [{ targets, labels: { settle_stack: 'dev' } }];
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(group, null, 2) + '\n');
  fs.renameSync(temp, file);
}

export function removeScrapeTargets(file = SCRAPE_TARGETS_FILE): void {
  fs.rmSync(file, { force: true });
}
