/**
 * The record store as production runs it, small (the full size is `npm run chaos -- --production`):
 * a PostgreSQL 15 primary with a synchronous standby behind PgBouncer in transaction mode, under
 * real worker processes running trajectories of file edits and shell commands. The primary is
 * SIGKILLed while calls are in flight and the standby promoted; then, in a second run, PgBouncer
 * is SIGKILLed and restarted while calls are in flight. Effects are counted from the files: each
 * must have happened exactly once, and the faults must have caught calls in flight.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { runScenario } from '../../chaos/harness/scenario';
import { inLane } from '../../chaos/harness/lanes';
import type { ScenarioResult } from '../../chaos/harness/scenario-types';
import { failoverSync, poolerRestart } from '../../chaos/record-store-scenarios';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-failover-test-'));
fs.chmodSync(dir, 0o755); // the postgres user must reach its data directory
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const small = { workers: 2, orchestrated: 2, scripted: 2, effectsEach: 4, spreadMs: 8_000, timeoutMs: 200_000 };

function run(scenario: Parameters<typeof inLane>[0]): Promise<ScenarioResult> {
  return runScenario(inLane(scenario, 'activity'), {
    dir,
    workflowBundlePath: inject('workflowBundlePath'),
    temporalAddress: inject('temporalAddress'),
    seed: 5,
    log: (line) => console.error(`[chaos] ${line}`),
  });
}

function expectExactlyOnce(result: ScenarioResult): void {
  const summary = {
    duplicates: result.duplicates,
    lost: result.lost,
    misreported: result.misreported,
    leftInDoubt: result.leftInDoubt,
    failedTrajectories: result.failedTrajectories,
    unfinished: result.unfinished,
  };
  expect(summary, result.problems.join('\n')).toEqual({
    duplicates: 0,
    lost: 0,
    misreported: 0,
    leftInDoubt: 0,
    failedTrajectories: 0,
    unfinished: 0,
  });
  expect(result.trajectories).toBe(4);
  expect(result.effects).toBeGreaterThanOrEqual(8);
}

describe('the record store failed over and its pooler restarted under real workers', () => {
  it(
    'synchronous standby: the primary killed with calls in flight, the standby promoted; every effect once',
    { timeout: 300_000 },
    async () => {
      // One failover a run: the next would come after the workload is done.
      const result = await run(failoverSync(small, 600_000));
      expectExactlyOnce(result);
      expect(result.faults.failover).toBe(1);
      expect(result.faults['failover: calls in flight']).toBeGreaterThan(0);
    },
  );

  it('PgBouncer killed and restarted with calls in flight; every effect once', { timeout: 300_000 }, async () => {
    const result = await run(poolerRestart(small));
    expectExactlyOnce(result);
    expect(result.faults['pooler-restart']).toBeGreaterThan(0);
    expect(result.faults['pooler-restart: calls in flight']).toBeGreaterThan(0);
  });
});
