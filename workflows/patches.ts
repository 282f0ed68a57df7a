/**
 * The combined patches. DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 * Every `patched(id)` a new execution passes records a marker and makes Temporal upsert the
 * `TemporalChangeVersion` search attribute: two history events, and a visibility write, per
 * patch. So each patch below implies the ones before it and is asked first: a new run records
 * one marker, and a history recorded before a patch replays without it. A new patch follows the
 * same rule, or calls `patched()` for itself where the change is.
 *
 * Retired (docs/orchestrator.md, Retiring patches): settle-2026-12 and the nine patches it
 * implied are gone with their old branches, and PATCH_LEAN_CALLS's old branch is gone: every run
 * takes the lean call path, and the patch is only asked, as `deprecatePatch`, for the histories
 * in the window that carry its marker.
 */
import { deprecatePatch, patched } from '@temporalio/workflow';

/**
 * Patch id: the call path awaits only what it must (call-pipeline.ts runCall, settled-call.ts
 * SettledCall.run): each promise a workflow creates costs a source-mapped stack capture in the
 * SDK's promise hook. Its old branch is retired; histories that recorded it (with `patched`)
 * need code that still asks for it.
 */
export const PATCH_LEAN_CALLS = 'settle-2026-12-lean-calls';

/**
 * Patch id: implies PATCH_LEAN_CALLS, and that a completing trajectory counts its problem calls
 * (denied, errored, invalid, given up, in doubt: core/outcome-label.ts problemCount), upserts
 * SettleProblemCount with its final status, and reads completed_with_problems when any. Asked
 * first, so a new run still records one marker; histories without it complete as they did.
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

/**
 * Patch id: implies PATCH_LOCAL_LANE (and so everything it implies), and that a trajectory's
 * workspace calls (the catalog's file and shell tools) go to its workspace's host: the first one
 * asks which host holds the workspace (locateWorkspace, recorded), and its attempts and probes run
 * on that host's own queue (core/hosts.ts), carrying the host so a worker elsewhere refuses them.
 * Asked first, so a new run still records one marker; histories without it sent every call to the
 * shared queue.
 */
export const PATCH_HOST_QUEUES = 'settle-2026-12-host-queues';

/**
 * Patch id, asked only where it changes something (call-pipeline.ts hostOf): when no worker found
 * a trajectory's workspace on its disk for minutes, its workspace calls are refused rather than
 * sent to the shared queue, where a host holding a stale copy would run them. Histories without
 * it sent them to the shared queue.
 */
export const PATCH_UNLOCATED_REFUSED = 'settle-2026-12-unlocated-refused';

/**
 * Patch id, asked only where it changes something (settled-call.ts), so a run whose local attempts
 * all complete fresh records no marker: a local attempt that meets the trace of an earlier attempt
 * of its call (the key busy under another holder's lease, or found or turned IN_DOUBT) is where a
 * worker died holding the workflow task. That call goes on in the activity
 * lane at once (a busy one without waiting in a timer), and the run's later calls go there too, so
 * further deaths cost an activity retry rather than another workflow task timeout with Temporal's
 * growing timeouts for a task that keeps failing. Histories without it kept the local lane.
 */
export const PATCH_LOCAL_TRACE = 'settle-2026-12-local-trace';

/**
 * Patch id, asked only where it changes something (call-pipeline.ts roomForLocalRead): a read in
 * the local lane runs there only while its workflow task has room for its result
 * (core/history-budget.ts); past that it runs as an activity. Histories without it ran every
 * local read locally.
 */
export const PATCH_LOCAL_READ_BUDGET = 'settle-2026-12-local-read-budget';

/** Which patches hold for this run: decided once, when the run starts, so every later step follows the same branch. */
export class Patches {
  /** This run recorded (or replays) PATCH_PROBLEM_COUNT, or a patch that implies it. */
  readonly problemCount: boolean;
  /** This run recorded (or replays) PATCH_LOCAL_LANE, or a patch that implies it: calls run in their tools' lanes. */
  readonly localLane: boolean;
  /** This run recorded (or replays) PATCH_HOST_QUEUES: workspace calls run on their workspace's host. */
  readonly hostQueues: boolean;

  constructor() {
    this.hostQueues = patched(PATCH_HOST_QUEUES);
    this.localLane = this.hostQueues || patched(PATCH_LOCAL_LANE);
    this.problemCount = this.localLane || patched(PATCH_PROBLEM_COUNT);
    // Asked only where a history may carry its marker (none newer holds); a new run never gets here.
    if (!this.problemCount) deprecatePatch(PATCH_LEAN_CALLS);
  }
}
