/**
 * One proposed call, start to finish. DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 *   validate → derive key → level policy (A0 read · A3 approval) → settled execution
 *            → in doubt? probe → settle → run again or finish; unknown → operator
 *
 * Nothing here ever guesses about an effect it cannot see: an IN_DOUBT call is probed before any
 * retry, and a probe that cannot tell leaves the call waiting for an operator.
 */
import { condition, patched, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import { deriveKey } from '../core/key';
import { InputError } from '../core/errors';
import { failed, type Observation } from '../core/observation';
import { accessFor } from '../core/capability/access';
import { checkBody } from '../core/capability/rules';
import { SPAWN_SUBAGENT, SpawnSubagentArgs } from '../core/capability/subagent';
import { spawnSubagent } from './subagent';
import type { RecordStateOrUnseen } from '../core/records';
import { CATALOG, isToolName, type SideEffectLevel } from '../core/tools/catalog';
import { parseArgs } from '../core/validation';
import type { ReadOnlyResult, SettleActivities } from '../activities/index';
import type { CallReport, ProposedCall, TrajectoryInput } from './definitions';
import type { TrajectoryState } from './trajectory-state';

const DEFAULT_LEASE_MS = 10_000;
const DEFAULT_APPROVAL_TIMEOUT_MS = 60 * 60_000;
/** Executions that ended certainly-not-executed (released, or settled NOT_EXECUTED) before giving up. */
const MAX_NOT_EXECUTED = 5;
const LEVEL_ORDER: SideEffectLevel[] = ['A0', 'A1', 'A2', 'A3'];

// Local activities: short, and recorded as one marker each instead of a task round trip.
const { deriveKeyedKey, recordProposedCall } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** Patch id: proposed calls are counted per tool (malformed-call rate), by a local activity. Histories before it have none. */
export const PATCH_RECORD_PROPOSED_CALLS = 'record-proposed-calls-v2';

const { probeToolCall, settleByOperator, runReadOnlyTool, lookupRecord } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export interface CallContext {
  trajectoryId: string;
  input: TrajectoryInput;
  state: TrajectoryState;
}

/** The level a tool runs at in this trajectory: the catalog's, or a higher override. */
export function effectiveLevel(tool: keyof typeof CATALOG, overrides: TrajectoryInput['levelOverrides']): SideEffectLevel {
  const base = CATALOG[tool].level;
  const override = overrides?.[tool];
  if (!override) return base;
  return LEVEL_ORDER.indexOf(override) > LEVEL_ORDER.indexOf(base) ? override : base;
}

export async function runCall(ctx: CallContext, turn: number, call: ProposedCall): Promise<CallReport> {
  const { state, input, trajectoryId } = ctx;
  const report: CallReport = {
    turn,
    callId: call.call_id,
    tool: call.tool,
    key: null,
    level: null,
    state: 'UNSEEN',
    resolution: 'pending',
    attempts: 0,
    observation: null,
    approval: null,
    compensatedBy: null,
  };
  state.reports.push(report);

  // Sub-agents: a child workflow with an attenuated capability (workflows/subagent.ts).
  if (call.tool === SPAWN_SUBAGENT) {
    let spawnArgs: SpawnSubagentArgs;
    try {
      spawnArgs = parseArgs(SpawnSubagentArgs, call.args);
      report.key = deriveKey({ trajectoryId, turn, callId: call.call_id, tool: call.tool, args: spawnArgs as Record<string, unknown> });
    } catch (err) {
      return rejectInvalid(ctx, report, call, err);
    }
    await countProposal(ctx, turn, call, null);
    report.level = 'A2';
    return spawnSubagent(ctx, report, spawnArgs);
  }

  // 1. Validate: a malformed call becomes an observation naming the field and rule.
  let args: Record<string, unknown>;
  let key: string;
  try {
    if (typeof call.tool !== 'string' || !isToolName(call.tool)) {
      throw new InputError('tool', `be one of ${Object.keys(CATALOG).join(', ')} (got ${JSON.stringify(call.tool)})`);
    }
    report.level = effectiveLevel(call.tool, input.levelOverrides);
    args = parseArgs(CATALOG[call.tool].args, call.args) as Record<string, unknown>;
    // 2. The key names the logical call; derived here, so it shows in history.
    key = deriveKey({ trajectoryId, turn, callId: call.call_id, tool: call.tool, args });
  } catch (err) {
    return rejectInvalid(ctx, report, call, err);
  }
  await countProposal(ctx, turn, call, null);
  // Keyed mode: the runtime's secret makes the key (the pure derivation above validated the parts).
  if (input.keyMode === 'hmac') key = await deriveKeyedKey({ turn, callId: call.call_id, tool: call.tool, args });
  report.key = key;
  state.argsByKey.set(key, args);
  const summary = `${call.tool} ${describeArgs(args)} · key ${key.slice(0, 6)}…`;

  // Capability pre-check on the token's unsigned fields (cheap, no activity). The activity
  // checks again with the signature, symlinks and budget: it decides, not this.
  if (input.capability) {
    const access = accessFor(call.tool, args, input.workspace);
    const verdict = checkBody(input.capability.body, { ...access, audience: trajectoryId, nowMs: Date.now() });
    if (!verdict.allowed) return deniedByCapability(report, verdict.component, verdict.reason);
  }

  // 3. Read-only (A0): no endpoint record, a retry simply reads again.
  if (report.level === 'A0') {
    report.attempts++;
    const result = await runReadOnlyTool.executeWithOptions(
      { startToCloseTimeout: '1 minute', retry: { initialInterval: '1 second', maximumAttempts: 5 }, summary },
      [{ tool: call.tool, args, workspace: input.workspace, key, ...(input.capability ? { capability: input.capability } : {}) }],
    );
    // Histories recorded before capabilities carry a bare observation.
    const outcome: ReadOnlyResult = 'kind' in result ? result : { kind: 'observed', observation: result as Observation };
    if (outcome.kind === 'denied') return deniedByCapability(report, outcome.component, outcome.reason);
    report.observation = outcome.observation;
    report.state = 'NO_RECORD';
    report.resolution = 'read';
    return report;
  }

  // 4. A3: a human approves before the effect — unless the effect already happened (a repeat).
  let approval: { approver: string; reason: string } | undefined;
  if (report.level === 'A3' && (await lookupRecord({ key })).state !== 'COMPLETED') {
    const decision = await awaitApproval(ctx, report, key, summary);
    if (decision.decision === 'deny') {
      report.resolution = 'denied';
      report.state = 'NO_RECORD';
      report.observation = failed(`denied by ${decision.approver}: ${decision.reason}`);
      return report;
    }
    approval = { approver: decision.approver, reason: decision.reason };
  }

  // 5. Settled execution.
  await executeSettled(ctx, report, key, args, summary, approval);
  return report;
}

/** A malformed call: counted, and answered with an observation naming the field and rule. */
async function rejectInvalid(ctx: CallContext, report: CallReport, call: ProposedCall, err: unknown): Promise<CallReport> {
  if (!(err instanceof InputError)) throw err;
  await countProposal(ctx, report.turn, call, { field: err.field, rule: err.rule });
  report.resolution = 'invalid';
  report.state = 'NO_RECORD';
  report.observation = failed(`invalid call: ${err.message}`);
  return report;
}

function deniedByCapability(report: CallReport, component: string, reason: string): CallReport {
  report.resolution = 'denied';
  report.state = 'NO_RECORD';
  report.observation = failed(`denied by capability (${component}): ${reason}`);
  return report;
}

/**
 * Counts a proposal from a model or orchestrator (not the runtime's own compensations) for the
 * per-tool malformed-call rate. Gated by a patch: trajectories recorded before it replay as they ran.
 */
export async function countProposal(
  ctx: CallContext,
  turn: number,
  call: ProposedCall,
  issue: { field: string; rule: string } | null,
): Promise<void> {
  if (call.call_id.endsWith('#compensate') || !patched(PATCH_RECORD_PROPOSED_CALLS)) return;
  await recordProposedCall({ trajectoryId: ctx.trajectoryId, turn, callId: call.call_id, tool: String(call.tool), issue });
}

async function awaitApproval(ctx: CallContext, report: CallReport, key: string, summary: string) {
  const { state, input } = ctx;
  const timeoutMs = input.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  report.resolution = 'awaiting_approval';
  state.awaitingApproval.add(key);
  state.publish(
    'waiting_approval',
    `A3 call waits for approval: ${summary}. Approve with: settle approve ${ctx.trajectoryId} ${key} --approver NAME --reason TEXT [--deny]`,
  );
  const decided = await condition(() => state.approvals.has(key), timeoutMs);
  state.awaitingApproval.delete(key);
  const decision = decided
    ? state.approvals.get(key)!
    : { key, approver: 'settle', decision: 'deny' as const, reason: `no approval within ${timeoutMs} ms (approval timeout)` };
  report.approval = { approver: decision.approver, decision: decision.decision, reason: decision.reason };
  report.resolution = 'pending';
  state.publish('running', `approval for ${key.slice(0, 8)}…: ${decision.decision} by ${decision.approver}`);
  return decision;
}

async function executeSettled(
  ctx: CallContext,
  report: CallReport,
  key: string,
  args: Record<string, unknown>,
  summary: string,
  approval: { approver: string; reason: string } | undefined,
): Promise<void> {
  const { state, input } = ctx;
  const leaseMs = input.leaseMs ?? DEFAULT_LEASE_MS;
  const backoffMs = (n: number) => Math.min((input.backoff?.initialMs ?? 1_000) * 2 ** n, input.backoff?.maxMs ?? 30_000);
  const { executeToolCall } = proxyActivities<SettleActivities>({ startToCloseTimeout: '10 minutes' });

  let notExecuted = 0;
  let busyRounds = 0;
  let settledBy: 'probe' | 'operator' | null = null;
  /** The effect certainly did not happen: run again after a backoff, a bounded number of times. */
  const retryOrGiveUp = async (detail: string): Promise<void> => {
    if (++notExecuted >= MAX_NOT_EXECUTED) {
      report.resolution = 'gave_up';
      report.observation = failed(`not executed after ${notExecuted} attempts; last: ${detail}`);
      return;
    }
    state.publish('running', `call ${key.slice(0, 8)}… not executed (${detail}); retrying`);
    await sleep(backoffMs(notExecuted - 1));
  };

  while (report.resolution === 'pending') {
    report.attempts++;
    state.publish('running', `turn ${report.turn}: ${summary}`);
    const outcome = await executeToolCall.executeWithOptions(
      {
        startToCloseTimeout: '10 minutes',
        // Heartbeats renew the lease every leaseMs/3: a dead worker is noticed within one lease.
        heartbeatTimeout: leaseMs,
        retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
        summary,
      },
      [
        {
          key,
          turn: report.turn,
          callId: report.callId,
          tool: report.tool,
          args,
          workspace: input.workspace,
          leaseMs,
          network: input.network ?? false,
          ...(approval ? { approval } : {}),
          ...(input.capability ? { capability: input.capability } : {}),
          ...(input.keyMode ? { keyMode: input.keyMode } : {}),
        },
      ],
    );
    switch (outcome.kind) {
      case 'completed':
        report.state = 'COMPLETED';
        report.observation = outcome.result;
        report.resolution =
          settledBy === 'probe'
            ? 'settled_by_probe'
            : settledBy === 'operator'
              ? 'settled_by_operator'
              : outcome.replayed
                ? 'replayed'
                : 'executed';
        break;
      case 'busy':
        report.state = 'IN_FLIGHT';
        state.publish('running', `call ${key.slice(0, 8)}… is IN_FLIGHT elsewhere until ${outcome.leaseUntil}; retrying`);
        await sleep(backoffMs(busyRounds++));
        break;
      case 'released':
        report.state = 'NOT_EXECUTED';
        await retryOrGiveUp(outcome.detail);
        break;
      case 'denied':
        deniedByCapability(report, outcome.component, outcome.reason);
        break;
      case 'in_doubt': {
        report.state = 'IN_DOUBT';
        const settled = await settleInDoubt(ctx, key, report);
        // Only a settlement to COMPLETED resolves the call; NOT_EXECUTED means claim and run it.
        settledBy = settled.state === 'COMPLETED' ? settled.by : null;
        if (settled.state === 'NOT_EXECUTED') await retryOrGiveUp(`settled NOT_EXECUTED by ${settled.by}`);
        break;
      }
    }
  }
  state.refresh(`turn ${report.turn}: ${report.tool} ${report.resolution}`);
}

/** Probes until the record leaves IN_DOUBT; escalates to an operator while the probe cannot tell. */
async function settleInDoubt(
  ctx: CallContext,
  key: string,
  report: CallReport,
): Promise<{ by: 'probe' | 'operator'; state: RecordStateOrUnseen }> {
  const { state, input } = ctx;
  let round = 0;
  while (true) {
    state.publish('waiting_probe', `call ${key.slice(0, 8)}… IN_DOUBT: probing (round ${round + 1})`);
    report.attempts++;
    const probe = await probeToolCall({ key, workspace: input.workspace });
    if (probe.state !== 'IN_DOUBT') {
      report.state = probe.state;
      return { by: 'probe', state: probe.state };
    }
    state.awaitingOperator.add(key);
    state.publish(
      'waiting_operator',
      `call ${key.slice(0, 8)}… IN_DOUBT, probe says unknown (${probe.detail}). ` +
        `Settle with: settle resolve ${key} --as applied|not-applied --operator NAME --reason TEXT`,
    );
    const delayMs = Math.min(5_000 * 2 ** round++, 10 * 60_000);
    if (await condition(() => state.operatorSettled.has(key), delayMs)) {
      state.awaitingOperator.delete(key);
      const settled = state.operatorSettled.get(key)!;
      report.state = settled;
      return { by: 'operator', state: settled };
    }
  }
}

/** The operator's verdict, applied by an activity (it writes the record). Used by the update handler. */
export async function applyOperatorVerdict(
  state: TrajectoryState,
  s: { key: string; verdict: 'applied' | 'not_applied'; operator: string; reason: string },
) {
  const result = await settleByOperator(s);
  if (result.state !== 'IN_DOUBT') state.operatorSettled.set(s.key, result.state as RecordStateOrUnseen);
  return result;
}

export function describeArgs(args: Record<string, unknown>): string {
  const target = args.path ?? args.command ?? args.pattern;
  const text = typeof target === 'string' ? target : '';
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
