/**
 * Where a settled call runs (docs/design.md#lanes): `local`, a local activity inside the
 * workflow task (short tools: one history marker, no task round trip), or `activity`, a regular
 * activity (long tools, and any call that outgrew its local bound). Pure: the worker decides a
 * tool's lane from its definition and the operator's overrides; a spec or a model never can.
 */
import { InputError } from '../errors';
import { TOOL_NAME_PATTERN } from '../key';

export type Lane = 'local' | 'activity';

/** A tool's lane as the workflow takes it; a local call carries the bound it must finish within. */
export type LaneChoice = { lane: 'local'; boundMs: number } | { lane: 'activity' };

/**
 * The longest maximum duration a tool may declare and still default to the local lane: a local
 * call holds its workflow task, and the workflow task timeout (TRAJECTORY_TASK_TIMEOUT_MS) is what
 * notices a dead worker, so a local call must be short against it.
 */
export const LOCAL_LANE_MAX_MS = 2_000;

/**
 * The workflow task timeout of a workflow whose calls run in the local lane (settle's client sets
 * it on trajectories and sub-agents; a team sets it on its own workflows): a dead worker's local
 * call runs again elsewhere about this long after its task started, where the activity lane has
 * its heartbeat timeout (the lease). Above LOCAL_LANE_MAX_MS by more than the 20% the SDK keeps
 * in hand before it heartbeats a task that waits for a local activity.
 */
export const LOCAL_LANE_TASK_TIMEOUT_MS = 3_000;

/** The bound of a tool the operator moved to the local lane without a declared duration. */
export const DEFAULT_LOCAL_BOUND_MS = LOCAL_LANE_MAX_MS;

export const ACTIVITY_LANE: LaneChoice = { lane: 'activity' };

/**
 * A tool's lane: the operator's override when there is one, else `local` for a tool that declares
 * a maximum duration up to LOCAL_LANE_MAX_MS (bounded by it), else `activity`.
 */
export function laneFor(maxDurationMs: number | undefined, override: Lane | undefined): LaneChoice {
  if (override === 'activity') return ACTIVITY_LANE;
  if (override === 'local') return { lane: 'local', boundMs: Math.min(maxDurationMs ?? DEFAULT_LOCAL_BOUND_MS, LOCAL_LANE_MAX_MS) };
  if (maxDurationMs !== undefined && maxDurationMs <= LOCAL_LANE_MAX_MS) return { lane: 'local', boundMs: maxDurationMs };
  return ACTIVITY_LANE;
}

export const LANES_VARIABLE = 'SETTLE_LANES';

/** `SETTLE_LANES=file_edit=activity,send_invoice=local`: the operator's lane per tool. Throws InputError naming the entry. */
export function parseLaneOverrides(text: string | undefined, field = LANES_VARIABLE): Record<string, Lane> {
  const lanes: Record<string, Lane> = {};
  const entries = (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const [tool = '', lane, ...rest] = entry.split('=');
    if (!TOOL_NAME_PATTERN.test(tool) || (lane !== 'local' && lane !== 'activity') || rest.length > 0) {
      throw new InputError(`${field}[${i}]`, `be <tool>=local or <tool>=activity (got ${JSON.stringify(entry)})`);
    }
    if (tool in lanes) throw new InputError(`${field}[${i}]`, `name each tool once (${tool} is named twice)`);
    lanes[tool] = lane;
  }
  return lanes;
}
