/**
 * Every chaos scenario runs in both lanes (core/tools/lanes.ts): `activity`, every short tool it
 * uses moved to the activity lane, and `local`, the defaults plus the tools short enough to be
 * moved there. The workers get the lanes as their operator would, through SETTLE_LANES; the
 * histories show where the settled calls' attempts actually ran, and each recovery is counted in
 * the lane of the call it caught.
 */
import type { Lane } from '../../core/tools/lanes';
import { stats, type Recovery, type Stats } from './metrics';
import type { LaneAttempts, LaneRecovery, Scenario, ScenarioResult } from './scenario-types';

export const LANES: readonly Lane[] = ['activity', 'local'];

/** The scenario as run in `lane`: its workers' SETTLE_LANES, the tools that run locally, its failpoints. */
export function inLane(scenario: Scenario, lane: Lane): Scenario {
  const setup = scenario.lanes ?? { localByDefault: [], madeLocal: [] };
  const overrides = lane === 'activity' ? setup.localByDefault.map((t) => `${t}=activity`) : setup.madeLocal.map((t) => `${t}=local`);
  const failpoints = lane === 'local' && setup.localFailpoints !== undefined ? setup.localFailpoints : scenario.failpoints;
  return {
    ...scenario,
    lane,
    laneOverrides: overrides.join(','),
    localTools: lane === 'local' ? [...setup.localByDefault, ...setup.madeLocal] : [],
    ...(failpoints !== undefined ? { failpoints } : {}),
    ...(lane === 'local' && setup.staysActivity ? { laneNote: `${setup.staysActivity} stays in the activity lane` } : {}),
  };
}

/** The name a run's directories, task queue and workflow ids carry: both lanes of a scenario may share a Temporal server. */
export function runName(scenario: Scenario): string {
  return scenario.lane ? `${scenario.name}-${scenario.lane}` : scenario.name;
}

/** The workers' environment for the run's lanes (nothing when the scenario forces none). */
export function laneEnv(scenario: Scenario): NodeJS.ProcessEnv {
  return scenario.laneOverrides ? { SETTLE_LANES: scenario.laneOverrides } : {};
}

export function laneRecoveries(scenario: Scenario, recovered: Recovery[]): LaneRecovery[] {
  const local = new Set(scenario.localTools ?? []);
  return recovered.map((r) => ({
    lane: local.has(r.tool) ? 'local' : 'activity',
    key: r.key,
    tool: r.tool,
    fault: r.fault,
    ms: r.ms,
    by: r.by,
  }));
}

/** A result's lane fields: the lane forced, what stayed out of it, where attempts ran, each recovery's lane. */
export function laneFields(
  scenario: Scenario,
  recovered: Recovery[],
  laneAttempts: LaneAttempts,
): Pick<ScenarioResult, 'lane' | 'laneNote' | 'laneAttempts' | 'laneRecoveries'> {
  return {
    ...(scenario.lane ? { lane: scenario.lane } : {}),
    ...(scenario.laneNote ? { laneNote: scenario.laneNote } : {}),
    laneAttempts,
    laneRecoveries: laneRecoveries(scenario, recovered),
  };
}

/**
 * Recovery after a worker SIGKILL, pooled over the runs, by the lane of the call it caught; calls
 * settle settled itself (an operator's pace is not the lane's).
 */
export function sigkillRecoveryByLane(results: ScenarioResult[]): Record<Lane, Stats> {
  const all = results.flatMap((r) => r.laneRecoveries ?? []).filter((r) => r.fault === 'sigkill' && r.by !== 'operator');
  return {
    activity: stats(all.filter((r) => r.lane === 'activity')),
    local: stats(all.filter((r) => r.lane === 'local')),
  };
}

const EXECUTE = 'executeToolCall';

interface HistoryEvent {
  markerRecordedEventAttributes?: {
    markerName?: string | null;
    details?: Record<string, { payloads?: { data?: Uint8Array | null }[] | null }> | null;
  } | null;
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string | null } | null } | null;
}

export function countLaneAttempts(events: readonly HistoryEvent[], into: LaneAttempts): void {
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === EXECUTE) into.activity++;
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') continue;
    // The marker's data names the local activity's type (and the seq, attempt, times).
    const data = marker.details?.data?.payloads?.[0]?.data;
    if (data && Buffer.from(data).toString('utf8').includes(EXECUTE)) into.local++;
  }
}
