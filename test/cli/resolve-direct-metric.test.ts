/**
 * A verdict `settle resolve` writes directly on a record (no trajectory waits for the call, so no
 * worker sees it) is still counted: the record store counts every operator settlement, and the
 * exporting worker reports it as settle_operator_settlements_total. A real worker process serves
 * /metrics; the real CLI settles a real IN_DOUBT record.
 */
import { afterAll, describe, expect, inject, it } from 'vitest';
import { deriveKey } from '../../core/key';
import { freePort } from '../../stack/ports';
import { runSettle } from '../support/cli';
import { openTestDb, testStore, uniqueId } from '../support/env';
import { until, workerProcess } from '../support/in-doubt';
import type { WorkerProcess } from '../../chaos/infra/worker-process';

const db = openTestDb(2);
const store = testStore(db);
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
let worker: WorkerProcess | undefined;
afterAll(async () => {
  await worker?.kill();
  await db.destroy();
});

/** One sample's value from Prometheus text; null when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return null;
}

describe('a verdict written directly on a record', { timeout: 240_000 }, () => {
  it('is counted in settle_operator_settlements_total on the exporting worker’s /metrics', async () => {
    const port = await freePort();
    worker = workerProcess(uniqueId('tq-direct'), '', { SETTLE_METRICS_PORT: String(port) });
    const scrape = async () => {
      const text = await fetch(`http://127.0.0.1:${port}/metrics`)
        .then((r) => r.text())
        .catch(() => null);
      return text !== null && sample(text, 'settle_gauge_exporter') === 1 ? text : null;
    };
    const before = await until(scrape, 'the worker exporting the installation’s gauges');
    const completedBefore = sample(before, 'settle_operator_settlements_total', { state: 'COMPLETED' });
    const notExecutedBefore = sample(before, 'settle_operator_settlements_total', { state: 'NOT_EXECUTED' });
    expect(completedBefore).not.toBeNull();
    expect(notExecutedBefore).not.toBeNull();

    // Two IN_DOUBT records of a trajectory that never ran on Temporal: `settle resolve` writes on them directly.
    const trajectoryId = uniqueId('direct');
    const keys = [];
    for (const callId of ['c1', 'c2']) {
      const args = { command: `echo ${callId} >> log` };
      const key = deriveKey({ trajectoryId, turn: 0, callId, tool: 'bash_execute', args });
      await store.claim({ key, trajectoryId, turn: 0, callId, tool: 'bash_execute', args }, { leaseMs: 30_000, holder: 'A' });
      await store.markInDoubt(key, 1, 'exception', 'worker:A');
      keys.push(key);
    }
    const applied = await runSettle(['resolve', keys[0]!, '--as', 'applied', '--reason', 'log has it'], { env: cliEnv });
    expect(applied.stdout).toContain('directly on the record');
    const notApplied = await runSettle(['resolve', keys[1]!, '--as', 'not-applied', '--reason', 'log lacks it'], { env: cliEnv });
    expect(notApplied.stdout).toContain('directly on the record');

    // The gauges refresh at most every 15 s; the worker itself saw no verdict.
    const after = await until(async () => {
      const text = await scrape();
      return text && sample(text, 'settle_operator_settlements_total', { state: 'NOT_EXECUTED' })! > notExecutedBefore! ? text : null;
    }, 'the direct verdicts counted');
    expect(sample(after, 'settle_operator_settlements_total', { state: 'COMPLETED' })).toBeGreaterThanOrEqual(completedBefore! + 1);
    expect(sample(after, 'settle_operator_settlements_total', { state: 'NOT_EXECUTED' })).toBeGreaterThanOrEqual(notExecutedBefore! + 1);
    expect(sample(after, 'settle_operator_verdicts_total', { verdict: 'applied' })).toBe(0);
    expect(after).toContain('# TYPE settle_operator_settlements_total counter');
  });
});
