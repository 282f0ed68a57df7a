/**
 * A rolling deploy, CI-sized (the full scenario is chaos/scenarios.ts rolling-deploy): two worker
 * processes, each drained with SIGTERM and replaced by one of a new build id, one at a time, twice
 * over, while trajectories of file edits and shell commands run with calls slowed to be caught in
 * flight. Effects are counted at the effect (the files): none twice, none lost; the histories begun
 * on the first build finish on the third with no workflow task failure (they replay there).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { sleep } from '../../chaos/harness/cluster';
import { runScenario } from '../../chaos/harness/scenario';
import type { Scenario } from '../../chaos/harness/scenario-types';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-rolling-test-'));
fs.chmodSync(dir, 0o755); // the postgres user must reach its data directory
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const scenario: Scenario = {
  name: 'rolling-deploy-ci',
  description: 'two rolling deploys (build 2 at 3 s, build 3 right after): each worker drained with SIGTERM and replaced, one at a time',
  workers: 2,
  orchestrated: 2,
  scripted: 2,
  effectsEach: 4,
  // Started over 40 s, so that both deploys meet calls in flight.
  spreadMs: 40_000,
  failpoints: ['file_edit.after_rename=sleep:1000@0.6', 'bash_execute.after_run=sleep:1000@0.6'].join(','),
  faults: async (cluster, _random, running) => {
    await sleep(3_000);
    await cluster.rollingReplace({ SETTLE_BUILD_ID: 'settle-ci-build-2' }, running);
    await cluster.rollingReplace({ SETTLE_BUILD_ID: 'settle-ci-build-3' }, running);
  },
  timeoutMs: 200_000,
};

describe('rolling deploy (CI-sized)', () => {
  it(
    'workers drained and replaced by new builds one at a time: no duplicate, nothing lost, no workflow task failure',
    { timeout: 300_000 },
    async () => {
      const result = await runScenario(scenario, {
        dir,
        workflowBundlePath: inject('workflowBundlePath'),
        temporalAddress: inject('temporalAddress'),
        seed: 7,
        log: (line) => console.error(`[rolling] ${line}`),
      });
      console.error(`[rolling] ${JSON.stringify({ faults: result.faults, durationS: result.durationS, effects: result.effects })}`);
      expect(
        {
          duplicates: result.duplicates,
          lost: result.lost,
          misreported: result.misreported,
          leftInDoubt: result.leftInDoubt,
          failedTrajectories: result.failedTrajectories,
          failedTurns: result.failedTurns,
          unfinished: result.unfinished,
          workflowTaskFailures: result.workflowTaskFailures,
        },
        result.problems.join('\n'),
      ).toEqual({
        duplicates: 0,
        lost: 0,
        misreported: 0,
        leftInDoubt: 0,
        failedTrajectories: 0,
        failedTurns: 0,
        unfinished: 0,
        workflowTaskFailures: {},
      });
      // Every worker of the first build was replaced (more when the second deploy met the workload), and none crashed on the way.
      expect(Object.keys(result.faults)).toEqual(['rolling-replace']);
      expect(result.faults['rolling-replace']).toBeGreaterThanOrEqual(2);
      expect(result.effects).toBeGreaterThanOrEqual(8);
    },
  );
});
