/**
 * The example alert rules (ops/prometheus/settle-alerts.yml) are valid Prometheus rules, do what
 * their unit tests say (series in, alerts out: settle-alerts.test.yml), and name only metrics a
 * settle worker serves. Needs promtool (Debian package `prometheus`; scripts/test-prerequisites.ts
 * installs it): without it this test fails, it does not skip.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { SettleMetrics } from '../../activities/observability/metrics';
import { loadTemporalTarget } from '../../client/connection';
import { startMetricsServer } from '../../workers/metrics-server';
import { SCRAPE_TARGETS_FILE, writeScrapeTargets } from '../../cli/dev-scrape-targets';

const DIR = path.resolve('ops/prometheus');
const RULES = path.join(DIR, 'settle-alerts.yml');
const TESTS = path.join(DIR, 'settle-alerts.test.yml');
const CONFIG = path.join(DIR, 'prometheus.yml');
const PROMTOOL = process.env.SETTLE_PROMTOOL ?? 'promtool';
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-alerts-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

function promtool(...args: string[]): { code: number | null; out: string } {
  const r = spawnSync(PROMTOOL, args, { encoding: 'utf8' });
  if (r.error) throw new Error(`promtool: ${r.error.message} — install it: sudo apt-get install -y prometheus (or set SETTLE_PROMTOOL)`);
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('alert rules', () => {
  it('pass `promtool check rules` and their unit tests', () => {
    const checked = promtool('check', 'rules', RULES);
    expect(checked.out).toContain('SUCCESS: 12 rules found');
    expect(checked.code).toBe(0);
    const tested = promtool('test', 'rules', TESTS);
    expect(tested.out).toContain('SUCCESS');
    expect(tested.code).toBe(0);
  });

  it('unit tests that notice a changed threshold', () => {
    // The same tests against rules whose IN_DOUBT threshold is ten times higher must fail.
    fs.copyFileSync(TESTS, path.join(scratch, 'settle-alerts.test.yml'));
    const rules = fs.readFileSync(RULES, 'utf8');
    expect(rules).toContain('> 0) > 600');
    fs.writeFileSync(path.join(scratch, 'settle-alerts.yml'), rules.replace('> 0) > 600', '> 0) > 6000'));
    const tested = promtool('test', 'rules', path.join(scratch, 'settle-alerts.test.yml'));
    expect(tested.code).not.toBe(0);
    expect(tested.out).toContain('alertname: SettleCallInDoubtTooLong');
  });

  it('name only metrics a worker serves', async () => {
    const server = await startMetricsServer({
      port: 0,
      metrics: new SettleMetrics(),
      temporalMetricsUrl: null,
      databaseUrl: inject('databaseUrl'),
      target: loadTemporalTarget({ address: inject('temporalAddress') }),
      exporterLockKey: BigInt(crypto.randomInt(1, 2 ** 47)),
    });
    try {
      const served = new Set([...(await (await fetch(server.url)).text()).matchAll(/^# TYPE (\w+) /gm)].map((m) => m[1]));
      const named = new Set([...fs.readFileSync(RULES, 'utf8').matchAll(/\b(settle_\w+)/g)].map((m) => m[1]));
      expect(named.size).toBeGreaterThan(5);
      expect([...named].filter((name) => !served.has(name))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('the example Prometheus config is valid and discovers the workers settle dev writes to its file_sd file', () => {
    const checked = promtool('check', 'config', CONFIG);
    expect(checked.out).toContain('is valid prometheus config file syntax');
    expect(checked.code).toBe(0);
    // Its file_sd path, relative to the config, is the file settle dev writes.
    const files = [...fs.readFileSync(CONFIG, 'utf8').matchAll(/^ +- (\S+\.json)$/gm)].map((m) => m[1]!);
    expect(files.map((f) => path.resolve(DIR, f))).toEqual([SCRAPE_TARGETS_FILE]);
    // The same layout in a scratch directory: what settle dev writes is what Prometheus discovers, under job "settle".
    const ops = path.join(scratch, 'sd', 'ops', 'prometheus');
    fs.mkdirSync(ops, { recursive: true });
    fs.copyFileSync(CONFIG, path.join(ops, 'prometheus.yml'));
    fs.copyFileSync(RULES, path.join(ops, 'settle-alerts.yml'));
    writeScrapeTargets(['127.0.0.1:19464', '127.0.0.1:19465'], path.resolve(ops, files[0]!));
    const discovered = spawnSync(PROMTOOL, ['check', 'service-discovery', '--timeout=5s', path.join(ops, 'prometheus.yml'), 'settle'], {
      encoding: 'utf8',
    });
    expect(discovered.status).toBe(0);
    const targets = JSON.parse(discovered.stdout) as { labels: Record<string, string> }[];
    expect(targets.map((t) => [t.labels.job, t.labels.instance])).toEqual([
      ['settle', '127.0.0.1:19464'],
      ['settle', '127.0.0.1:19465'],
    ]);
  });
});
