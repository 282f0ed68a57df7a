/**
 * The chaos suite's deterministic subset (the full suite is `npm run chaos`): orchestrated and
 * scripted trajectories of file edits and shell commands on two real worker processes, with a
 * fixed fault schedule — a worker SIGKILLed, PostgreSQL killed with -9, the other worker
 * SIGKILLed — in both lanes (chaos/harness/lanes.ts): file edits as activities, then as local
 * activities. Effects are counted from the files; every one must have happened exactly once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { sleep } from '../../chaos/harness/cluster';
import { runScenario } from '../../chaos/harness/scenario';
import type { Scenario } from '../../chaos/harness/scenario-types';
import { inLane, LANES } from '../../chaos/harness/lanes';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-chaos-test-'));
fs.chmodSync(dir, 0o755); // the postgres user must reach its data directory
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const scenario: Scenario = {
  name: 'fixed-faults',
  description: 'SIGKILL of a worker at 3 s, PostgreSQL kill -9 at 7 s (down 1.5 s), SIGKILL of a worker at 12 s',
  workers: 2,
  orchestrated: 2,
  scripted: 2,
  effectsEach: 4,
  faults: async (cluster) => {
    await sleep(3_000);
    cluster.killRandomWorker(() => 0);
    await sleep(4_000);
    await cluster.restartPostgres('crash', 1_500);
    await sleep(3_500);
    cluster.killRandomWorker(() => 0.99);
  },
  timeoutMs: 200_000,
  lanes: { localByDefault: ['file_edit', 'file_view'], madeLocal: [] },
};

describe.each(LANES)('chaos suite (deterministic subset), %s lane', (lane) => {
  it(
    'worker kills and a PostgreSQL crash: no duplicate, nothing lost, nothing left in doubt, no failure',
    { timeout: 300_000 },
    async () => {
      const result = await runScenario(inLane(scenario, lane), {
        dir,
        workflowBundlePath: inject('workflowBundlePath'),
        temporalAddress: inject('temporalAddress'),
        seed: 11,
        log: (line) => console.error(`[chaos] ${line}`),
      });
      const summary = {
        duplicates: result.duplicates,
        lost: result.lost,
        misreported: result.misreported,
        leftInDoubt: result.leftInDoubt,
        failedTrajectories: result.failedTrajectories,
        failedTurns: result.failedTurns,
        unfinished: result.unfinished,
      };
      expect(summary, result.problems.join('\n')).toEqual({
        duplicates: 0,
        lost: 0,
        misreported: 0,
        leftInDoubt: 0,
        failedTrajectories: 0,
        failedTurns: 0,
        unfinished: 0,
      });
      expect(result.faults).toMatchObject({ sigkill: 2, 'postgres-crash': 1 });
      // Every effect the orchestrators asked for happened (they re-propose what settle reports not executed).
      expect(result.effects).toBeGreaterThanOrEqual(8);
      expect(result.trajectories).toBe(4);
      // The file edits ran in the lane asked for (the shell commands are activities in both).
      expect(result.lane).toBe(lane);
      if (lane === 'local') expect(result.laneAttempts?.local).toBeGreaterThan(0);
      else expect(result.laneAttempts?.local).toBe(0);
    },
  );
});
