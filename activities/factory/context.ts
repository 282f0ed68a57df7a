/**
 * What every activity of a worker shares: its store, identity, keys, policy and tool registry,
 * and the stores built on the database (call counters, capability budgets).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../../core/failures';
import type { EndpointStore } from '../store/endpoint-store';
import { CallStats } from '../store/call-stats';
import { BudgetStore } from '../capability/budget-store';
import type { KeyRing } from '../capability/keyring';
import type { OperatorKeys } from '../operator/operator-keys';
import type { WorkerPolicy } from '../worker-policy';
import { ToolRegistry } from '../tools/registry';
import { hostIdFor } from '../host-id';

export interface ActivityDeps {
  store: EndpointStore;
  /** Worker identity, recorded as the holder of claims. */
  identity: string;
  /** Capability keys (SETTLE_CAP_KEYS); without them, calls that carry a capability are denied. */
  keyRing?: KeyRing | null;
  /** What the worker's operator allows (workspace root, model endpoints and keys, development mode). */
  policy: WorkerPolicy;
  /** Operator public keys (SETTLE_OPERATOR_KEYS); without them, every operator verdict and approval is refused. */
  operatorKeys?: OperatorKeys | null;
  /** The tools this worker runs (default: the built-ins); a team's own come through SettlePlugin (docs/plugin.md). */
  registry?: ToolRegistry;
  /**
   * The workspace of a team workflow's settled() calls on this worker (real path, inside the
   * policy's root), named by its operator (`settle mcp serve --workspace`): the file and shell
   * built-ins run there. Never from a workflow or a call: a call naming any other workspace is refused.
   */
  workspace?: string;
  /**
   * Whether this worker runs settle's trajectories, whose calls name their own workspace inside the
   * policy's root (settle's worker). A plugin worker that does not serves no call naming a workspace:
   * a team workflow's calls have none, or run in the operator's `workspace` above.
   */
  runsTrajectories?: boolean;
  /** This worker's host id (core/hosts.ts); default: SETTLE_HOST_ID, else derived (activities/host-id.ts). */
  host?: string;
  /**
   * Whether this worker also polls its host's own queue (core/hosts.ts hostQueue): only such a
   * worker tells a trajectory its workspace is here, or the workspace calls sent there would wait.
   */
  pollsHostQueue?: boolean;
}

export interface ActivityContext {
  store: EndpointStore;
  identity: string;
  keyRing: KeyRing | null;
  policy: WorkerPolicy;
  operatorKeys: OperatorKeys | null;
  registry: ToolRegistry;
  callStats: CallStats;
  budgets: BudgetStore;
  /** The operator's workspace for this worker's calls, when it has one (ActivityDeps.workspace). */
  ownWorkspace: string | undefined;
  runsTrajectories: boolean;
  /** This worker's host: recorded on its workspace calls' claims; its probes see only this host's disk. */
  host: string;
  pollsHostQueue: boolean;
  /** Where a call runs: a trajectory's workspace; a team workflow's call (''), this worker's own when its operator named one. */
  workspaceFor(requested: string): string;
}

export function activityContext({
  store,
  identity,
  keyRing = null,
  policy,
  operatorKeys = null,
  registry = new ToolRegistry([], policy.lanes ? { lanes: policy.lanes } : {}),
  workspace: ownWorkspace,
  runsTrajectories = false,
  host = hostIdFor(policy.workspaceRoot),
  pollsHostQueue = false,
}: ActivityDeps): ActivityContext {
  return {
    host,
    pollsHostQueue,
    ownWorkspace,
    runsTrajectories,
    workspaceFor: (requested) => (requested === '' && ownWorkspace ? ownWorkspace : requested),
    store,
    identity,
    keyRing,
    policy,
    operatorKeys,
    registry,
    callStats: new CallStats(store.db),
    budgets: new BudgetStore(store.db),
  };
}

/** The executing workflow's id (the trajectory's); an activity that needs one refuses to run outside a workflow. */
export function trajectoryIdOf(activity: string): string {
  const trajectoryId = Context.current().info.workflowExecution?.workflowId;
  if (!trajectoryId) throw ApplicationFailure.nonRetryable(`${activity} must run inside a trajectory workflow`, FAILURE.NoWorkflow);
  return trajectoryId;
}
