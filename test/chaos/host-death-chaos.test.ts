/**
 * A host's death in the chaos harness, CI-sized (the full scenario is chaos/production-scenarios.ts
 * host-death): two worker processes on two "hosts" (mount namespaces, each its own disk at the
 * workspace root and SETTLE_RUNS_DIR; a stale copy of every workspace on the other host's disk),
 * one host killed — every process of it at once — while its calls are in flight and back seconds
 * later. Effects are counted at the effect on both disks: every effect once, on its workspace's
 * host; none on the other host's copy; no claim recorded by a host that does not hold the workspace.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { runScenario } from '../../chaos/harness/scenario';
import { inLane } from '../../chaos/harness/lanes';
import { hostDeath } from '../../chaos/production-scenarios';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-host-death-chaos-'));
fs.chmodSync(dir, 0o755); // the postgres user must reach its data directory
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('a host dies under the chaos workload (CI-sized)', () => {
  it('its calls wait for it: every effect once on its own host, none elsewhere, none left in doubt', { timeout: 400_000 }, async () => {
    const small = { workers: 2, orchestrated: 2, scripted: 2, effectsEach: 4, spreadMs: 8_000, timeoutMs: 300_000 };
    // One death a run (the next would come after the workload is done); one PostgreSQL, not the replicated store, to stay cheap.
    const scenario = { ...hostDeath(small, 600_000, 60_000), recordStore: undefined };
    const result = await runScenario(inLane(scenario, 'activity'), {
      dir,
      workflowBundlePath: inject('workflowBundlePath'),
      temporalAddress: inject('temporalAddress'),
      seed: 3,
      log: (line) => console.error(`[host-death] ${line}`),
    });
    console.error(
      `[host-death] ${JSON.stringify({ faults: result.faults, recovery: result.recovery.all, hosts: result.hosts, problems: result.problems })}`,
    );
    expect(
      {
        duplicates: result.duplicates,
        lost: result.lost,
        misreported: result.misreported,
        leftInDoubt: result.leftInDoubt,
        failedTrajectories: result.failedTrajectories,
        failedTurns: result.failedTurns,
        failedCalls: result.failedCalls,
        unfinished: result.unfinished,
        hosts: result.hosts,
      },
      result.problems.join('\n'),
    ).toEqual({
      duplicates: 0,
      lost: 0,
      misreported: 0,
      leftInDoubt: 0,
      failedTrajectories: 0,
      failedTurns: 0,
      failedCalls: 0,
      unfinished: 0,
      hosts: { count: 2, effectsElsewhere: 0, claimsElsewhere: 0 },
    });
    expect(result.trajectories).toBe(4);
    expect(result.effects).toBeGreaterThanOrEqual(16);
    expect(result.faults['host-death']).toBe(1);
    // The death caught calls in flight, and each of them was settled again.
    expect(result.faults['host-death: calls in flight']).toBeGreaterThan(0);
    expect(result.recovery.unsettled).toBe(0);
  });
});
