/**
 * The combined patch. DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 * Every `patched(id)` a new execution passes records a marker and makes Temporal upsert the
 * `TemporalChangeVersion` search attribute: two history events, and a visibility write, per
 * patch. A trajectory started since settle-2026-12 records that one patch, first thing, and it
 * implies every patch below: their ids are never evaluated in such a run (evaluating one would
 * record its marker). A history without it (recorded before) evaluates each patch as it did.
 *
 * A patch added after settle-2026-12 is NOT implied by it (a history recorded with settle-2026-12
 * but before that patch must replay without it): call `patched()` for it directly, or, as
 * PATCH_LEAN_CALLS does, make it a newer combined patch that implies settle-2026-12 and is asked
 * first — a new run then still records one marker.
 */
import { patched } from '@temporalio/workflow';

/**
 * Patch id: implies every ImpliedPatch, and that settle's client put the initial search attributes
 * into the start request (search-attributes.ts, initialSearchAttributes): the run skips the
 * upserts that would only repeat them, and starts sub-agents with theirs.
 */
export const PATCH_SETTLE_2026_12 = 'settle-2026-12';

/** The patches a trajectory before settle-2026-12 evaluated one by one (each constant's comment says what it changed). */
export const IMPLIED_PATCHES = [
  'count-proposals-in-activities-v3', // trajectory-state.ts PATCH_COUNT_IN_ACTIVITIES (implies the next two)
  'upsert-search-attributes-on-change-v1', // trajectory-state.ts PATCH_UPSERT_ON_CHANGE
  'record-proposed-calls-v2', // call-pipeline.ts PATCH_RECORD_PROPOSED_CALLS
  'wait-for-cancelled-activities-v1', // settled-call.ts PATCH_WAIT_FOR_CANCELLED_ACTIVITIES
  'operator-wait-v1', // settled-call.ts PATCH_OPERATOR_WAIT
  'operator-watch-record-v1', // settled-call.ts PATCH_WATCH_RECORD
  'strict-tool-arguments-v1', // trajectory.ts PATCH_STRICT_TOOL_ARGUMENTS
  'compensate-args-from-record-v1', // trajectory.ts PATCH_COMPENSATE_ARGS_FROM_RECORD
  'reserve-child-ids-v1', // trajectory.ts PATCH_RESERVE_CHILD_IDS
] as const;

export type ImpliedPatch = (typeof IMPLIED_PATCHES)[number];

/**
 * Patch id: implies settle-2026-12 (and so every ImpliedPatch), and that the call path awaits
 * only what it must (call-pipeline.ts runCall, settled-call.ts SettledCall.run): each promise a
 * workflow creates costs a source-mapped stack capture in the SDK's promise hook, and the same
 * steps with fewer awaits run in another microtask order than the histories recorded before it.
 * Asked before settle-2026-12, so a new run records this one marker and never evaluates the other.
 */
export const PATCH_LEAN_CALLS = 'settle-2026-12-lean-calls';

/**
 * Patch id: implies PATCH_LEAN_CALLS (and so everything it implies), and that a completing
 * trajectory counts its problem calls (denied, errored, invalid, given up, in doubt:
 * core/outcome-label.ts problemCount), upserts SettleProblemCount with its final status, and
 * reads completed_with_problems when any. Asked first, so a new run still records one marker;
 * histories without it complete as they did.
 */
export const PATCH_PROBLEM_COUNT = 'settle-2026-12-problem-count';

/**
 * Patch id: implies PATCH_PROBLEM_COUNT (and so everything it implies), and that a call runs in
 * its tool's lane (core/tools/lanes.ts): a local activity for a tool the worker puts in the local
 * lane, a regular activity otherwise. The lanes come from the worker, recorded: a trajectory asks
 * once per run (laneTable), a team's call with its description (describeTeamCall). Asked first,
 * so a new run still records one marker; histories without it ran every call as an activity.
 */
export const PATCH_LOCAL_LANE = 'settle-2026-12-local-lane';

/** Which patches hold for this run: decided once, when the run starts, so every later step follows the same branch. */
export class Patches {
  /** This run recorded (or replays) settle-2026-12, or a patch that implies it. */
  readonly current: boolean;
  /** This run recorded (or replays) PATCH_LEAN_CALLS, or a patch that implies it. */
  readonly leanCalls: boolean;
  /** This run recorded (or replays) PATCH_PROBLEM_COUNT, or a patch that implies it. */
  readonly problemCount: boolean;
  /** This run recorded (or replays) PATCH_LOCAL_LANE: calls run in their tools' lanes. */
  readonly localLane: boolean;

  constructor() {
    this.localLane = patched(PATCH_LOCAL_LANE);
    this.problemCount = this.localLane || patched(PATCH_PROBLEM_COUNT);
    this.leanCalls = this.problemCount || patched(PATCH_LEAN_CALLS);
    this.current = this.leanCalls || patched(PATCH_SETTLE_2026_12);
  }

  /** Whether `id` holds: always under settle-2026-12 (no marker), else `patched(id)` as before. */
  has(id: ImpliedPatch): boolean {
    return this.current || patched(id);
  }
}
