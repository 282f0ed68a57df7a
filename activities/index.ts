/**
 * The activities a settle worker registers. Every side effect of a trajectory happens here:
 * tool execution through endpoint records, probes, operator settlement.
 */
import { FAILURE } from '../core/failures';
import { failpoint } from './failpoints';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { deriveKey } from '../core/key';
import { failed, truncate, type Observation } from '../core/observation';
import { MAX_OBSERVATION_CHARS } from '../core/history-budget';
import type { CallOutcome, RecordState } from '../core/records';
import type { SideEffectLevel } from '../core/tools/catalog';
import { parseArgs } from '../core/validation';
import { attemptLabel, isErrorObservation, type OutcomeLabel } from '../core/outcome-label';
import type { EndpointStore } from './store/endpoint-store';
import { CallStats, type ProposedCall as RecordedProposal } from './store/call-stats';
import { BudgetStore } from './capability/budget-store';
import { authorize } from './capability/authorize';
import { attenuate, type Attenuation } from './capability/attenuate';
import type { KeyRing } from './capability/keyring';
import { COST_PER_CALL, type Access } from '../core/capability/access';
import type { AnyTeamTool, ToolCompensation } from './tools/team-tool';
import type { ChildRequest } from '../core/capability/rules';
import { probeRecord, runSettled } from './settled/run-settled';
import { emitCallEvent } from './observability/events';
import { registerToolNames } from './observability/tool-names';
import { settleByOperator, type OperatorSettlement } from './settled/operator-settlement';
import type { OperatorKeys } from './operator/operator-keys';
import { verifyCredential } from './operator/operator-credentials';
import { InputError, errorMessage } from '../core/errors';
import { WATCH_DEFAULTS, watchRecord, type WatchedRecord, type WatchRecordInput } from './settled/watch-record';
import { ToolRegistry } from './tools/registry';
import { WORKSPACE_FREE_BUILT_INS } from './tools/built-in';
import { callChatCompletions, type ModelRequest } from './model/openai-chat';
import type { ModelReply } from '../core/model/chat';
import type { ReadOnlyTool } from './tools/read-only-tool';
import { workspaceRefusal } from './workspace';
import type { WorkerPolicy } from './worker-policy';
import type { SettledTool } from './settled/settled-tool';

export interface ToolCallInput {
  key: string;
  turn: number;
  callId: string;
  tool: string;
  args: Record<string, unknown>;
  workspace: string;
  leaseMs: number;
  /** Ignored: the network comes only from the capability's `connect` right (kept for recorded histories). */
  network?: boolean;
  /** For A3 calls: the approval, recorded on the claim event. */
  approval?: { approver: string; reason: string };
  /** The trajectory's signed capability; checked here at every access. */
  capability?: unknown;
  /** How the key was derived (keyed mode uses the worker's SETTLE_KEY_SECRET). */
  keyMode?: 'sha256' | 'hmac';
  /**
   * Count this call as a valid proposal (settle_tool_calls) — in the claim statement, so the
   * workflow needs no bookkeeping activity of its own. Absent in histories before the fast path.
   */
  countProposal?: boolean;
  /**
   * End an IN_DOUBT attempt with a non-retryable `SettleInDoubt` failure carrying the outcome,
   * instead of returning it (the UI shows a returned attempt as "Completed"). Absent in histories
   * and from workflow code before `inDoubtFails` was sent, which expect the outcome returned.
   */
  inDoubtFails?: boolean;
}

export interface ReadOnlyCallInput {
  tool: string;
  args: Record<string, unknown>;
  workspace: string;
  /** The call's idempotency key (charges the capability budget once). */
  key?: string;
  capability?: unknown;
  /** Count this call as a valid proposal (settle_tool_calls), alongside the read. */
  proposal?: { turn: number; callId: string };
}

export type ReadOnlyResult =
  | { kind: 'observed'; observation: Observation; outcome?: OutcomeLabel }
  | { kind: 'denied'; component: string; reason: string; outcome?: OutcomeLabel };

export interface ProbeReport {
  verdict: 'applied' | 'not_applied' | 'unknown';
  detail: string;
  /** The record's state after the probe was applied. */
  state: RecordState;
  generation: number;
  /** Who settled the record, when it was no longer IN_DOUBT (e.g. `operator:alice`). */
  settledBy?: string | null;
  /** An unknown verdict no later probe can change: only an operator can settle the call. */
  final?: boolean;
}

export type { OperatorSettlement };

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
}

/** A team tool's call as the worker's registry checked it (describeTeamCall). */
export interface DescribedTeamCall {
  /** The arguments as they will execute (parsed by the tool's schema): the key is derived from these. */
  args: Record<string, unknown>;
  level: SideEffectLevel;
  /** Whether a probe can settle an in-doubt call; without one it waits for an operator. */
  probes: boolean;
}

/** What an approveCall update asks: checked against its operator credential before the workflow takes it. */
export interface ApprovalRequest {
  key: string;
  decision: 'approve' | 'deny';
  reason: string;
  approver: string;
  credential: unknown;
}

/** The worker's policy refused the call (component `policy`): nothing was claimed or touched. */
const POLICY = 'policy';

export function createActivities({
  store,
  identity,
  keyRing = null,
  policy,
  operatorKeys = null,
  registry = ToolRegistry.builtIn(),
  workspace: ownWorkspace,
}: ActivityDeps) {
  // Metrics label calls of these tools by name; every other name is `other` (bounded series).
  registerToolNames(registry.names());
  const settledCall = (toolName: string, rawArgs: unknown) => checkedCall(registry, toolName, rawArgs, 'settled');
  const callStats = new CallStats(store.db);
  const budgets = new BudgetStore(store.db);
  /** Where a call runs: a trajectory's workspace; a team workflow's call (''), this worker's own when its operator named one. */
  const workspaceFor = (requested: string): string => (requested === '' && ownWorkspace ? ownWorkspace : requested);

  /**
   * Checks the capability (if the workflow passed one) for this access, in the activity: the
   * tool's definition says what the call needs of it (`access`). Every tool alike: a worker that
   * holds capability keys refuses a call without a capability, and a capability cannot authorize
   * a tool that declares no access.
   */
  async function checkAccess(
    capability: unknown,
    tool: string,
    args: Record<string, unknown>,
    workspace: string,
    key: string,
    audience: string,
  ): Promise<{ denied: { component: string; reason: string } | null; network: boolean; egress?: string[] }> {
    const registered = registry.get(tool);
    // A worker its operator gave a workspace of its own serves that one only.
    if (ownWorkspace && workspace !== ownWorkspace) {
      return {
        denied: { component: POLICY, reason: `this worker runs calls in its operator's workspace ${ownWorkspace} only (got ${workspace})` },
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
    if (!keyRing)
      return { denied: { component: 'kid', reason: 'this worker holds no capability keys (SETTLE_CAP_KEYS is unset)' }, network: false };
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

  return {
    /** Signs a child's capability, attenuated from the parent's, and reserves its budget. */
    async attenuateCapability(input: { parent: unknown; child: ChildRequest }): Promise<Attenuation> {
      if (!keyRing) return { ok: false, component: 'kid', reason: 'this worker holds no capability keys (SETTLE_CAP_KEYS is unset)' };
      return attenuate(input.parent, input.child, Context.current().info.workflowExecution?.workflowId ?? '', { ring: keyRing, budgets });
    },

    /** A sub-agent ended: its unspent budget returns to the parent. */
    async closeChildBudget(input: { digest: string }): Promise<void> {
      await budgets.closeChild(input.digest);
    },

    /**
     * A team tool's call from a team's workflow (api/workflow.ts, run as a local activity, so its
     * answer is in history and replay never asks again): the arguments validated by the worker's
     * registry, the tool's level and whether it has a probe. Refuses (non-retryable) an unknown
     * tool, spawn_subagent, a built-in that needs a workspace on a worker without one of its own
     * (it runs in settle's trajectory), a workspace-free built-in (http_request) without a
     * capability, and invalid arguments, naming the field.
     */
    async describeTeamCall(input: { tool: string; args: unknown; capability?: boolean }): Promise<DescribedTeamCall> {
      const registered = registry.get(input.tool);
      if (!registered || registered.runsIn === 'workflow' || (registered.needsWorkspace && !ownWorkspace)) {
        throw ApplicationFailure.nonRetryable(
          registered
            ? `${input.tool} is a built-in tool that needs a workspace: it runs in settle's trajectory workflow ` +
                `(a team workflow's settled() calls its own tools and ${[...WORKSPACE_FREE_BUILT_INS].join(', ')})`
            : `unknown tool ${input.tool} (not registered on this worker)`,
          FAILURE.UnknownTool,
        );
      }
      // A workspace-free built-in's reach is the capability's objects alone (http_request: its host:
      // objects); without one it could reach nothing, so it is refused here, before anything is
      // claimed or sent. The workspace built-ins reach the operator's workspace, as a trajectory's do.
      if (registered.builtIn && !registered.needsWorkspace && input.capability !== true) {
        throw ApplicationFailure.nonRetryable(
          `${input.tool} needs a capability: pass settled({ capability }) one with the connect right and ` +
            'host: objects for the hosts it calls (settle cap mint)',
          FAILURE.CapabilityRequired,
        );
      }
      const { args } = checkedCall(registry, input.tool, input.args, registered.level === 'A0' ? 'read-only' : 'settled');
      return { args, level: registered.level, probes: registered.probes };
    },

    /**
     * How a completed call of a team tool is undone (its definition's `compensate`, run as a local
     * activity, so a replay takes the same answer): another call, or why there is none.
     */
    async describeCompensation(input: { tool: string; args: Record<string, unknown> }): Promise<ToolCompensation> {
      const definition = registry.get(input.tool)?.definition;
      if (!definition || definition.level === 'A0' || !definition.compensate) {
        return { kind: 'none', reason: `${input.tool} declares no compensator` };
      }
      try {
        const plan = definition.compensate(input.args);
        if (plan?.kind === 'call' && typeof plan.tool === 'string' && typeof plan.args === 'object' && plan.args !== null) return plan;
        if (plan?.kind === 'none' && typeof plan.reason === 'string') return plan;
        return { kind: 'none', reason: `${input.tool}'s compensate must return { kind: 'call', tool, args } or { kind: 'none', reason }` };
      } catch (err) {
        return { kind: 'none', reason: `${input.tool}'s compensate failed: ${errorMessage(err)}` };
      }
    },

    /** Keyed mode: the key of a call, derived with the worker's secret (run as a local activity). */
    async deriveKeyedKey(input: { turn: number; callId: string; tool: string; args: Record<string, unknown> }): Promise<string> {
      const trajectoryId = Context.current().info.workflowExecution?.workflowId;
      if (!trajectoryId) throw ApplicationFailure.nonRetryable('deriveKeyedKey must run inside a trajectory workflow', FAILURE.NoWorkflow);
      return deriveKey({ trajectoryId, ...input }, keySecret());
    },

    /** Counts a proposed call and, if malformed, the rule it broke (idempotent: retries count once). */
    async recordProposedCall(call: RecordedProposal): Promise<void> {
      await callStats.recordProposedCall(call);
      if (call.issue) {
        const { trajectoryId, turn, callId, tool } = call;
        emitCallEvent({
          event: 'malformed_call',
          trajectoryId,
          turn,
          callId,
          tool,
          key: null,
          generation: null,
          field: call.issue.field,
          rule: call.issue.rule,
        });
      }
    },

    /** Runs one attempt at one logical call through its endpoint record. */
    async executeToolCall(input: ToolCallInput): Promise<LabelledOutcome> {
      const ctx = Context.current();
      const trajectoryId = ctx.info.workflowExecution?.workflowId;
      if (!trajectoryId) throw ApplicationFailure.nonRetryable('executeToolCall must run inside a trajectory workflow', FAILURE.NoWorkflow);
      const { tool, args } = settledCall(input.tool, input.args);
      // The key is derived in workflow code; derive it again here from the executing
      // workflow's own id, so a drifted or forged key can never claim someone else's record.
      const key = deriveKey(
        { trajectoryId, turn: input.turn, callId: input.callId, tool: input.tool, args },
        input.keyMode === 'hmac' ? keySecret() : undefined,
      );
      // A call that never reaches the claim statement is counted on its own.
      const countAlone = async () => {
        if (input.countProposal) {
          await callStats.recordProposedCall({ trajectoryId, turn: input.turn, callId: input.callId, tool: input.tool, issue: null });
        }
      };
      if (key !== input.key) {
        await countAlone();
        throw ApplicationFailure.nonRetryable(`key mismatch: workflow sent ${input.key}, activity derived ${key}`, FAILURE.KeyMismatch);
      }
      const workspace = workspaceFor(input.workspace);
      const access = await checkAccess(input.capability, input.tool, args, workspace, key, trajectoryId);
      if (access.denied) {
        await countAlone();
        // A refusal says nothing about what an earlier attempt of this call did: when the key has
        // a record (an attempt on another worker claimed it, then died), report its state, so the
        // workflow waits for a record in doubt to be settled instead of calling the call denied.
        const record = await store.get(key);
        emitCallEvent({
          event: 'capability_denied',
          trajectoryId,
          turn: input.turn,
          callId: input.callId,
          key,
          generation: record?.generation ?? null,
          tool: input.tool,
          ...access.denied,
        });
        return {
          outcome: 'denied',
          kind: 'denied',
          ...access.denied,
          ...(record ? { record: { state: record.state, generation: record.generation, settledBy: record.settledBy } } : {}),
        };
      }
      return runSettled(
        store,
        tool,
        { key, trajectoryId, turn: input.turn, callId: input.callId, tool: input.tool, args },
        // The network only from the capability's `connect` right; the input's `network` grants nothing.
        {
          workspace,
          workspaceRoot: policy.workspaceRoot,
          network: access.network,
          ...(access.egress ? { egress: access.egress } : {}),
        },
        {
          leaseMs: input.leaseMs,
          holder: `${identity}#${ctx.info.activityId}@${ctx.info.attempt}`,
          heartbeat: () => ctx.heartbeat(),
          onDatabaseRetry: (what, err) => {
            ctx.log.warn(`database unreachable; retrying "${what}" for key ${key}`, { error: err.message });
          },
          ...(input.approval ? { claimDetail: { approval: input.approval } } : {}),
          ...(input.countProposal ? { countProposal: true } : {}),
          retried: ctx.info.attempt > 1,
        },
      ).then((outcome) => {
        const labelled = boundOutcome(outcome);
        if (labelled.kind === 'in_doubt' && input.inDoubtFails) throw inDoubtFailure(labelled);
        return labelled;
      });
    },

    /** The state of a key's endpoint record (UNSEEN when there is none). Read-only. */
    async lookupRecord(input: { key: string }): Promise<{ state: RecordState | 'UNSEEN'; generation: number }> {
      const record = await store.get(input.key);
      return record ? { state: record.state, generation: record.generation } : { state: 'UNSEEN', generation: 0 };
    },

    /** The validated arguments a record was claimed with (compensators need them after a continue-as-new). */
    async recordArgs(input: { key: string }): Promise<Record<string, unknown> | null> {
      const record = await store.get(input.key);
      return record ? (record.args as Record<string, unknown>) : null;
    },

    /** One model turn through an OpenAI-compatible chat-completions server. */
    async callModel(request: ModelRequest): Promise<ModelReply> {
      return callChatCompletions(request, policy);
    },

    /** Runs an A0 (read-only) call: no endpoint record, a retry just reads again. */
    async runReadOnlyTool(input: ReadOnlyCallInput): Promise<ReadOnlyResult> {
      const { tool, args } = checkedCall(registry, input.tool, input.args, 'read-only');
      const audience = Context.current().info.workflowExecution?.workflowId ?? '';
      const workspace = workspaceFor(input.workspace);
      const access = await checkAccess(
        input.capability,
        input.tool,
        args,
        workspace,
        input.key ?? `${audience}:${Context.current().info.activityId}`,
        audience,
      );
      // Counted whatever the capability says (as the workflow counted it before the check).
      const counted = input.proposal
        ? callStats.recordProposedCall({ trajectoryId: audience, ...input.proposal, tool: input.tool, issue: null })
        : null;
      if (access.denied) {
        await counted;
        emitCallEvent({
          event: 'capability_denied',
          trajectoryId: audience,
          turn: input.proposal?.turn ?? -1,
          callId: input.proposal?.callId ?? '',
          key: input.key ?? null,
          // A read-only (A0) call has no endpoint record.
          generation: null,
          tool: input.tool,
          ...access.denied,
        });
        return { outcome: 'denied', kind: 'denied', ...access.denied };
      }
      // The tool's own failure (a permission, an I/O error) is the answer to the model, not a
      // reason to retry the activity or fail the turn.
      const run = tool.run(args, { workspace }).catch((err: unknown) => failed(`${input.tool} failed: ${errorMessage(err)}`));
      const [observation] = await Promise.all([run, counted]);
      const bounded = boundObservation(observation);
      return { outcome: isErrorObservation(bounded) ? 'error' : 'ok', kind: 'observed', observation: bounded };
    },

    /** Probes an IN_DOUBT call's environment and settles it when the facts decide (docs/design.md#probes). */
    async probeToolCall(input: { key: string; workspace: string }): Promise<ProbeReport> {
      const record = await store.get(input.key);
      if (!record) throw ApplicationFailure.nonRetryable(`no endpoint record for key ${input.key}`, FAILURE.NoRecord);
      if (record.state !== 'IN_DOUBT') {
        return {
          verdict: 'unknown',
          detail: `record is ${record.state}, nothing to settle`,
          state: record.state,
          generation: record.generation,
          settledBy: record.settledBy,
        };
      }
      const workspace = workspaceFor(input.workspace);
      if (ownWorkspace && workspace !== ownWorkspace) {
        const detail = `this worker probes in its operator's workspace ${ownWorkspace} only (got ${workspace})`;
        return { verdict: 'unknown', detail, state: record.state, generation: record.generation };
      }
      const { tool, args } = settledCall(record.tool, record.args);
      const { verdict, state: applied } = await probeRecord(store, tool, args, record, { workspace });
      const final = verdict.verdict === 'unknown' && verdict.final === true;
      // The window between a probe's answer and the workflow acting on it (test/chaos/resolve-race.test.ts).
      await failpoint('probe.after_answer');
      return {
        verdict: verdict.verdict,
        detail: verdict.detail,
        state: applied,
        generation: record.generation,
        ...(final ? { final } : {}),
      };
    },

    /**
     * While a call waits for an operator: returns once its record left IN_DOUBT at the generation in
     * doubt (settled directly by `settle resolve`, or by a late completion). Read-only; runs until
     * then, heartbeating, and ends when cancelled (the verdict came through the settleCall update).
     */
    async watchRecord(input: WatchRecordInput): Promise<WatchedRecord> {
      const ctx = Context.current();
      return watchRecord(store, input, {
        ...WATCH_DEFAULTS,
        heartbeat: () => ctx.heartbeat(),
        sleep: async (ms) => {
          await ctx.sleep(ms);
        },
        onReadError: (err) => {
          ctx.log.warn(`watching the record of ${input.key}: read failed, trying again`, { error: err.message });
        },
      });
    },

    /**
     * An operator's verdict on an IN_DOUBT call, recorded with their name and reason. Returns the
     * generation it settled: a verdict belongs to that execution, not to later ones.
     */
    async settleByOperator(input: OperatorSettlement): Promise<{ state: RecordState; generation: number }> {
      const trajectoryId = Context.current().info.workflowExecution?.workflowId;
      if (!trajectoryId)
        throw ApplicationFailure.nonRetryable('settleByOperator must run inside a trajectory workflow', FAILURE.NoWorkflow);
      const outcome = await settleByOperator(store, input, { keys: operatorKeys, trajectoryId }).catch(refusedAuthority);
      if (outcome.state === 'UNSEEN') throw ApplicationFailure.nonRetryable(`no endpoint record for key ${input.key}`, FAILURE.NoRecord);
      return { state: outcome.state, generation: outcome.generation };
    },

    /**
     * Before a trajectory takes an approval (run as a local activity by the approveCall update):
     * the operator credential must prove this decision on this call of this trajectory. Returns
     * the approver it proves, the one recorded; refuses (non-retryable) otherwise.
     */
    async verifyApproval(input: ApprovalRequest): Promise<{ approver: string }> {
      const trajectoryId = Context.current().info.workflowExecution?.workflowId;
      if (!trajectoryId) throw ApplicationFailure.nonRetryable('verifyApproval must run inside a trajectory workflow', FAILURE.NoWorkflow);
      const check = verifyCredential(
        input.credential,
        { purpose: 'approve', trajectoryId, key: input.key, decision: input.decision, reason: input.reason },
        operatorKeys,
      );
      if (!check.ok) refusedAuthority(new InputError('credential', check.rule));
      const approver = check.body.operator;
      if (input.approver !== approver) {
        refusedAuthority(new InputError('approver', `be the operator the credential proves (${approver})`));
      }
      emitCallEvent({ event: 'approval_decided', trajectoryId, key: input.key, generation: null, decision: input.decision, approver });
      return { approver };
    },
  };
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

/** An operator action without the authority it needs: refused for good (the update fails, naming the rule). */
function refusedAuthority(err: unknown): never {
  if (err instanceof InputError) throw ApplicationFailure.nonRetryable(err.message, FAILURE.OperatorAuthority);
  throw err;
}

export type SettleActivities = ReturnType<typeof createActivities>;

/* eslint-disable @typescript-eslint/no-explicit-any -- the registry is heterogeneous; args were validated against the tool's own schema */
function checkedCall<K extends 'read-only' | 'settled'>(
  registry: ToolRegistry,
  toolName: string,
  rawArgs: unknown,
  kind: K,
): { tool: K extends 'read-only' ? ReadOnlyTool<any> : SettledTool<any, any, Observation>; args: Record<string, unknown> } {
  const registered = registry.get(toolName);
  const runnable = registry.runnable(toolName);
  if (!registered || !runnable) throw ApplicationFailure.nonRetryable(`unknown tool ${toolName}`, FAILURE.UnknownTool);
  if (registered.runsIn === 'workflow') {
    throw ApplicationFailure.nonRetryable(`${toolName} runs in its workflow (a child workflow), not in an activity`, FAILURE.WrongLevel);
  }
  if (runnable.kind !== kind) {
    throw ApplicationFailure.nonRetryable(`${toolName} is a ${runnable.kind} tool, not ${kind}`, FAILURE.WrongLevel);
  }
  let args: Record<string, unknown>;
  try {
    args = parseArgs(registered.definition.args, rawArgs) as Record<string, unknown>;
  } catch (err) {
    // The broken rule as details too: an AI SDK agent counts it for `settle stats` (workflows/ai-sdk.ts).
    const issue = err instanceof InputError ? [{ field: err.field, rule: err.rule }] : [];
    throw ApplicationFailure.nonRetryable(`invalid arguments for ${toolName}: ${(err as Error).message}`, FAILURE.InvalidArgs, ...issue);
  }
  return { tool: runnable.tool as never, args };
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export const KEY_SECRET_VARIABLE = 'SETTLE_KEY_SECRET';

/** The keyed-mode secret: only in the worker's environment, never in workflow code or history. */
function keySecret(): Uint8Array {
  const secret = process.env[KEY_SECRET_VARIABLE];
  if (!secret || secret.length < 16) {
    throw ApplicationFailure.nonRetryable(
      `${KEY_SECRET_VARIABLE} must be set on the worker (at least 16 characters) for keyMode "hmac"`,
      FAILURE.KeySecret,
    );
  }
  return new TextEncoder().encode(secret);
}

/** Observations travel through workflow history: keep each well under Temporal's payload limits. */
export { MAX_OBSERVATION_CHARS };

function boundObservation(o: Observation): Observation {
  const output = truncate(o.output, MAX_OBSERVATION_CHARS);
  const error = o.error === null ? { text: null, truncated: false } : truncate(o.error, 16 * 1024);
  return {
    output: output.text,
    error: error.text,
    exit_status: o.exit_status,
    truncated: o.truncated || output.truncated || error.truncated,
    ...(o.partial ? { partial: true as const } : {}),
  };
}

/**
 * The attempt's result, led by its outcome label: the Web UI shows every activity that returned as
 * "Completed", so the first thing in its result says in_doubt, replayed or error when it is.
 */
function boundOutcome(outcome: CallOutcome<Observation>): LabelledOutcome {
  const bounded = outcome.kind === 'completed' ? { ...outcome, result: boundObservation(outcome.result) } : outcome;
  return { outcome: attemptLabel(bounded), ...bounded };
}

/** An IN_DOUBT attempt as a failure: red in the Web UI, its message saying what to do; not retried (the workflow probes). */
function inDoubtFailure(outcome: LabelledOutcome & { kind: 'in_doubt' }): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE.InDoubt,
    message: `IN_DOUBT at generation ${outcome.generation}: ${outcome.detail} — the effect may have happened; a probe or an operator settles it`,
    nonRetryable: true,
    details: [outcome],
  });
}

/** A settled attempt's result as the activity returns it (histories before the label lack `outcome`). */
export type LabelledOutcome = CallOutcome<Observation> & { outcome?: OutcomeLabel };
