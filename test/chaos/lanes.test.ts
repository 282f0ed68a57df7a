/**
 * The chaos harness's lanes: what each run of a scenario sets on its workers, and how its
 * recoveries and attempts are counted by lane.
 */
import { describe, expect, it } from 'vitest';
import { countLaneAttempts, inLane, laneEnv, laneRecoveries, runName, sigkillRecoveryByLane } from '../../chaos/harness/lanes';
import type { Recovery } from '../../chaos/harness/metrics';
import type { Scenario, ScenarioResult } from '../../chaos/harness/scenario-types';
import { QUICK } from '../../chaos/scenarios';
import { parseLaneOverrides } from '../../core/tools/lanes';

const base: Scenario = {
  name: 'kills',
  description: 'kills',
  workers: 1,
  orchestrated: 1,
  scripted: 1,
  effectsEach: 2,
  timeoutMs: 1_000,
  failpoints: 'file_edit.before_rename=sleep:1000@0.6',
  lanes: {
    localByDefault: ['file_edit', 'file_view'],
    madeLocal: ['append_ledger_line'],
    staysActivity: 'bash_execute (no short bound)',
    localFailpoints: 'file_edit.before_rename=sleep:300@0.6',
  },
};

const recovery = (tool: string, ms: number, fault: Recovery['fault'] = 'sigkill', by = 'probe'): Recovery => ({
  key: `k-${tool}-${ms}`,
  tool,
  fault,
  ms,
  by,
});

describe('chaos lanes', () => {
  it('the activity run moves the short tools to the activity lane and keeps the scenario failpoints', () => {
    const run = inLane(base, 'activity');
    expect(laneEnv(run)).toEqual({ SETTLE_LANES: 'file_edit=activity,file_view=activity' });
    expect(run.localTools).toEqual([]);
    expect(run.failpoints).toBe(base.failpoints);
    expect(run.laneNote).toBeUndefined();
    expect(runName(run)).toBe('kills-activity');
  });

  it('the local run keeps the defaults, moves the short team tools to it, and says what stayed out', () => {
    const run = inLane(base, 'local');
    expect(laneEnv(run)).toEqual({ SETTLE_LANES: 'append_ledger_line=local' });
    expect(run.localTools).toEqual(['file_edit', 'file_view', 'append_ledger_line']);
    expect(run.failpoints).toBe('file_edit.before_rename=sleep:300@0.6');
    expect(run.laneNote).toBe('bash_execute (no short bound) stays in the activity lane');
    expect(runName(run)).toBe('kills-local');
  });

  it("every quick scenario's lane overrides are valid SETTLE_LANES", () => {
    for (const scenario of QUICK) {
      for (const lane of ['activity', 'local'] as const) {
        expect(() => parseLaneOverrides(inLane(scenario, lane).laneOverrides)).not.toThrow();
      }
    }
  });

  it("counts each recovery in its call's lane, and pools the SIGKILL ones settle settled itself", () => {
    const local = inLane(base, 'local');
    const recovered = [recovery('file_edit', 4_000), recovery('bash_execute', 3_500), recovery('file_edit', 9_000, 'zombie')];
    expect(laneRecoveries(local, recovered).map((r) => [r.tool, r.lane])).toEqual([
      ['file_edit', 'local'],
      ['bash_execute', 'activity'],
      ['file_edit', 'local'],
    ]);
    const results = [
      { laneRecoveries: laneRecoveries(local, [...recovered, recovery('file_edit', 6_000)]) },
      {
        laneRecoveries: laneRecoveries(inLane(base, 'activity'), [
          recovery('file_edit', 3_000),
          recovery('bash_execute', 50_000, 'sigkill', 'operator'),
        ]),
      },
    ] as ScenarioResult[];
    expect(sigkillRecoveryByLane(results)).toEqual({
      local: { n: 2, p50Ms: 4_000, maxMs: 6_000 },
      activity: { n: 2, p50Ms: 3_000, maxMs: 3_500 },
    });
  });

  it('counts settled-call attempts from the history: local-activity markers and activity tasks of executeToolCall', () => {
    const marker = (type: string) => ({
      markerRecordedEventAttributes: {
        markerName: 'core_local_activity',
        details: { data: { payloads: [{ data: Buffer.from(JSON.stringify({ seq: 1, activity_type: type })) }] } },
      },
    });
    const scheduled = (name: string) => ({ activityTaskScheduledEventAttributes: { activityType: { name } } });
    const into = { local: 0, activity: 0 };
    countLaneAttempts([marker('laneTable'), marker('executeToolCall'), scheduled('executeToolCall'), scheduled('probeToolCall')], into);
    expect(into).toEqual({ local: 1, activity: 1 });
  });
});
