/**
 * Whether a call may run: the worker's policy (workspace inside the root, a capability when the
 * worker holds keys), then the capability itself for the access the tool's definition declares.
 */
import { COST_PER_CALL, type Access } from '../../core/capability/access';
import { errorMessage } from '../../core/errors';
import { authorize } from '../capability/authorize';
import { emitCallEvent } from '../observability/events';
import type { AnyTeamTool } from '../tools/team-tool';
import { workspaceRefusal } from '../workspace';
import type { ActivityContext } from './context';

/** The worker's policy refused the call (component `policy`): nothing was claimed or touched. */
const POLICY = 'policy';

export interface Denial {
  component: string;
  reason: string;
}

export interface AccessCheck {
  tool: string;
  args: Record<string, unknown>;
  workspace: string;
  /** The call's idempotency key (charges the capability budget once). */
  key: string;
  /** The executing workflow's id: a capability is minted for one audience. */
  audience: string;
}

/**
 * Checks the capability (if the workflow passed one) for this access, in the activity: the
 * tool's definition says what the call needs of it (`access`). Every tool alike: a worker that
 * holds capability keys refuses a call without a capability, and a capability cannot authorize
 * a tool that declares no access.
 */
export async function checkAccess(
  { registry, policy, keyRing, budgets, ownWorkspace, runsTrajectories }: ActivityContext,
  capability: unknown,
  { tool, args, workspace, key, audience }: AccessCheck,
): Promise<{ denied: Denial | null; network: boolean; egress?: string[] }> {
  const registered = registry.get(tool);
  // A worker its operator gave a workspace of its own serves that one only.
  if (ownWorkspace && workspace !== ownWorkspace) {
    return {
      denied: { component: POLICY, reason: `this worker runs calls in its operator's workspace ${ownWorkspace} only (got ${workspace})` },
      network: false,
    };
  }
  // Only a trajectory names its workspace, and only on a worker that runs trajectories: any workflow
  // can schedule this activity, and naming a trajectory's workspace must not reach into it.
  if (!ownWorkspace && !runsTrajectories && workspace !== '') {
    return {
      denied: {
        component: POLICY,
        reason:
          `this worker runs no trajectories, so no call may name a workspace (got ${workspace}); ` +
          "a team workflow's calls run in none, or in the one its operator gives SettlePlugin({ workspace })",
      },
      network: false,
    };
  }
  // A team's workflow has no workspace (''); a trajectory always has one, and it must be inside the root.
  if (registered?.needsWorkspace || workspace !== '') {
    const outside = await workspaceRefusal(workspace, policy.workspaceRoot);
    if (outside) return { denied: { component: POLICY, reason: outside }, network: false };
  }
  if (capability === undefined || capability === null) {
    // A worker that can check capabilities checks every workflow's calls: none is not "all".
    if (keyRing && !policy.allowNoCapability) {
      return {
        denied: {
          component: POLICY,
          reason:
            'this worker holds capability keys, so every trajectory needs a capability (settle cap mint), ' +
            "as does a team workflow's every call (settled({ capability })); " +
            'SETTLE_ALLOW_NO_CAPABILITY=1 on the worker allows none, for development only',
        },
        network: false,
      };
    }
    return { denied: null, network: false };
  }
  if (!keyRing) return { denied: { component: 'kid', reason: NO_KEYS }, network: false };
  const declared = accessOf(registered?.definition, args, workspace);
  if ('refusal' in declared) return { denied: { component: 'rights', reason: declared.refusal }, network: false };
  const { verdict, network, egress } = await authorize(
    capability,
    { ...declared.access, audience, nowMs: Date.now(), key },
    { ring: keyRing, budgets },
  );
  return verdict.allowed
    ? { denied: null, network, ...(egress ? { egress } : {}) }
    : { denied: { component: verdict.component, reason: verdict.reason }, network: false };
}

export const NO_KEYS = 'this worker holds no capability keys (SETTLE_CAP_KEYS is unset)';

/**
 * A refused call, as the log and metrics see it (`capability_denied`) and as the activity returns
 * it. `key` and `generation` are null when the call has neither (a read-only call has no record).
 */
export function denied(
  call: { trajectoryId: string; turn: number; callId: string; tool: string; key: string | null; generation: number | null },
  denial: Denial,
): { outcome: 'denied'; kind: 'denied' } & Denial {
  emitCallEvent({ event: 'capability_denied', ...call, ...denial });
  return { outcome: 'denied', kind: 'denied', ...denial };
}

/** What a call needs of a capability, from its tool's definition; a refusal when it declares nothing or its mapping throws. */
function accessOf(
  definition: AnyTeamTool | undefined,
  args: Record<string, unknown>,
  workspace: string,
): { access: Access } | { refusal: string } {
  if (!definition?.access) {
    return { refusal: `${definition?.name ?? 'this tool'} declares no access (defineTool's access): a capability cannot authorize it` };
  }
  try {
    const { right, target, cost } = definition.access(args, { workspace });
    return { access: { op: right, target, cost: cost ?? COST_PER_CALL } };
  } catch (err) {
    return { refusal: `${definition.name}'s access could not be determined: ${errorMessage(err)}` };
  }
}
