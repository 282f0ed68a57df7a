/**
 * Settled calls (A1–A3): every attempt through the call's endpoint record; their keys, probes of
 * calls in doubt, and reads of the record while a call waits.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { z } from 'zod';
import { FAILURE } from '../../core/failures';
import { deriveKey } from '../../core/key';
import type { RecordState } from '../../core/records';
import { failpoint } from '../failpoints';
import { probeRecord, runSettled, type ClaimEvidence } from '../settled/run-settled';
import { WATCH_DEFAULTS, watchRecord, type WatchedRecord, type WatchRecordInput } from '../settled/watch-record';
import type { Observation } from '../../core/observation';
import { approvalForExecution, type ExecutingCall, type ExecutionApproval } from '../operator/execution-approval';
import type { EndpointRecord } from '../store/endpoint-store';
import { checkAccess, denied, type Denial } from './access';
import { checkedCall } from './checked-call';
import { trajectoryIdOf, type ActivityContext } from './context';
import { keySecret } from './key-secret';
import { boundOutcome, inDoubtFailure, type LabelledOutcome } from './outcome';
import { evidenceElsewhere, hostBound, wrongHost } from './host-check';
import { RunsElsewhere } from '../settled/run-settled';

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
  /**
   * For A3 calls: the approval, as the workflow took it. Only its operator credential counts: the
   * activity verifies it against the call it executes and records the approver it proves.
   */
  approval?: { approver: string; reason: string; credential?: unknown };
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
   * The host of the trajectory's workspace, as the workflow found it (core/hosts.ts): a worker on
   * another host refuses the call (retryable) before it claims anything. Absent in histories
   * before hosts, and where no host was found.
   */
  host?: string;
}

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

/** What an attempt heartbeats once it has claimed (RunOptions.onClaimed), read by its retry. */
const ClaimHeartbeat = z.object({
  settleClaim: z.object({ key: z.string(), generation: z.number().int().positive(), intent: z.unknown() }),
});

/** A probe that answered unknown, as a benign failure carrying its report (FAILURE.ProbeUnknown). */
function probeUnknownFailure(report: ProbeReport): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE.ProbeUnknown,
    message: `probe could not tell${report.final ? ', and no later probe could' : ''}: ${report.detail} — the call stays IN_DOUBT at generation ${report.generation}`,
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
    details: [report],
  });
}

export function settledCallActivities(ctx: ActivityContext) {
  const { store, registry, policy, identity, callStats } = ctx;
  const settledCall = (toolName: string, rawArgs: unknown) => checkedCall(registry, toolName, rawArgs, 'settled');
  /** Probes an IN_DOUBT call's environment and settles it when the facts decide (docs/design.md#probes). */
  const probeCall = async (input: { key: string; workspace: string }): Promise<ProbeReport> => {
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
    // A probe that cannot see the evidence answers unknown, never "not applied".
    const elsewhere = evidenceElsewhere(ctx, record);
    if (elsewhere) {
      return {
        verdict: 'unknown',
        detail: elsewhere.detail,
        state: record.state,
        generation: record.generation,
        ...(elsewhere.final ? { final: true } : {}),
      };
    }
    const workspace = ctx.workspaceFor(input.workspace);
    if (ctx.ownWorkspace && workspace !== ctx.ownWorkspace) {
      const detail = `this worker probes in its operator's workspace ${ctx.ownWorkspace} only (got ${workspace})`;
      return { verdict: 'unknown', detail, state: record.state, generation: record.generation };
    }
    if (!ctx.ownWorkspace && !ctx.runsTrajectories && workspace !== '') {
      const detail = `this worker runs no trajectories and probes in no workspace a workflow names (got ${workspace})`;
      return { verdict: 'unknown', detail, state: record.state, generation: record.generation };
    }
    const { tool, args } = settledCall(record.tool, record.args);
    const { verdict, state: applied, settledBy } = await probeRecord(store, tool, args, record, { workspace });
    const final = verdict.verdict === 'unknown' && verdict.final === true;
    // The window between a probe's answer and the workflow acting on it (test/chaos/resolve-race.test.ts).
    await failpoint('probe.after_answer');
    return {
      verdict: verdict.verdict,
      detail: verdict.detail,
      state: applied,
      generation: record.generation,
      settledBy,
      ...(final ? { final } : {}),
    };
  };
  return {
    /** Keyed mode: the key of a call, derived with the worker's secret (run as a local activity). */
    async deriveKeyedKey(input: { turn: number; callId: string; tool: string; args: Record<string, unknown> }): Promise<string> {
      return deriveKey({ trajectoryId: trajectoryIdOf('deriveKeyedKey'), ...input }, keySecret());
    },

    /** Runs one attempt at one logical call through its endpoint record. */
    async executeToolCall(input: ToolCallInput): Promise<LabelledOutcome> {
      const activity = Context.current();
      const trajectoryId = trajectoryIdOf('executeToolCall');
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
      // A refusal names the key's record when it has one: the workflow then waits while its effect is unknown.
      const refused = (record: EndpointRecord | undefined, denial: Denial) => {
        const refusal = denied(
          { trajectoryId, turn: input.turn, callId: input.callId, key, generation: record?.generation ?? null, tool: input.tool },
          denial,
        );
        return record
          ? { ...refusal, record: { state: record.state, generation: record.generation, settledBy: record.settledBy } }
          : refusal;
      };
      if (key !== input.key) {
        await countAlone();
        throw ApplicationFailure.nonRetryable(`key mismatch: workflow sent ${input.key}, activity derived ${key}`, FAILURE.KeyMismatch);
      }
      // A workspace call runs only on its workspace's host: refused elsewhere before anything is
      // claimed or touched, unless it is settled already (a stored result replays on any host).
      if (input.host !== undefined && hostBound(ctx, input.tool) && input.host !== ctx.host) {
        const record = await store.get(key);
        if (record?.state !== 'COMPLETED') throw wrongHost(input.tool, input.host, ctx.host);
        return boundOutcome({ kind: 'completed', result: record.result as Observation, replayed: true, generation: record.generation });
      }
      const approval = approvalOf(ctx, input, { namespace: activity.info.namespace, trajectoryId, key, tool: input.tool, args });
      if (approval?.ok === false) {
        await countAlone();
        // A call that already completed replays its result: that needs no approval, as it does nothing.
        const record = await store.get(key);
        if (record?.state === 'COMPLETED') {
          return boundOutcome({ kind: 'completed', result: record.result as Observation, replayed: true, generation: record.generation });
        }
        return refused(record, { component: 'approval', reason: `the approval's credential must ${approval.rule}` });
      }
      const workspace = ctx.workspaceFor(input.workspace);
      const access = await checkAccess(ctx, input.capability, { tool: input.tool, args, workspace, key, audience: trajectoryId });
      if (access.denied) {
        await countAlone();
        // A refusal says nothing about what an earlier attempt of this call did: when the key has
        // a record (an attempt on another worker claimed it, then died), report its state, so the
        // workflow waits for a record in doubt to be settled instead of calling the call denied.
        return refused(await store.get(key), access.denied);
      }
      // The claim this call's last attempt heartbeated, carried to each next attempt until one
      // claims anew: a retry that finds it gone from the record store must not run the effect again.
      let heartbeatDetails = activity.info.isLocal ? undefined : ClaimHeartbeat.safeParse(activity.info.heartbeatDetails).data;
      const earlierClaim = heartbeatDetails?.settleClaim.key === key ? heartbeatDetails.settleClaim : undefined;
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
          // A claim's holder: `<worker identity>#<activity id>@<attempt>` (the chaos harness reads it).
          holder: `${identity}#${activity.info.activityId}@${activity.info.attempt}`,
          // A local activity has no heartbeat: its workflow task's timeout notices a dead worker.
          ...(activity.info.isLocal
            ? {}
            : {
                heartbeat: () => activity.heartbeat(heartbeatDetails),
                onClaimed: (claim: ClaimEvidence) => {
                  heartbeatDetails = { settleClaim: claim };
                  activity.heartbeat(heartbeatDetails);
                },
              }),
          ...(earlierClaim ? { earlierClaim } : {}),
          onDatabaseRetry: (what, err) => {
            activity.log.warn(`database unreachable; retrying "${what}" for key ${key}`, { error: err.message });
          },
          // The approver the credential proves, never the name the workflow sent.
          ...(approval?.ok ? { claimDetail: { approval: { approver: approval.approver, reason: approval.reason } } } : {}),
          ...(input.countProposal ? { countProposal: true } : {}),
          retried: activity.info.attempt > 1,
          // A local attempt holds its workflow task: it does not wait out another holder's lease.
          ...(activity.info.isLocal ? { busyAtOnce: true } : {}),
          ...(hostBound(ctx, input.tool) ? { host: ctx.host } : {}),
        },
      ).then(
        (outcome) => {
          const labelled = boundOutcome(outcome);
          // An IN_DOUBT attempt fails (non-retryable `SettleInDoubt`, the outcome in its details)
          // rather than returning, so the Web UI shows it failed, not a green "Completed".
          if (labelled.kind === 'in_doubt') throw inDoubtFailure(labelled);
          return labelled;
        },
        (err: unknown) => {
          // NOT_EXECUTED on another host: it runs again there, never here.
          if (err instanceof RunsElsewhere) throw wrongHost(input.tool, err.host, ctx.host);
          throw err;
        },
      );
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

    /** Probes an IN_DOUBT call's environment and settles it when the facts decide (docs/design.md#probes). */
    async probeToolCall(input: { key: string; workspace: string; failUnknown?: boolean }): Promise<ProbeReport> {
      const report = await probeCall(input);
      // Asked by the workflow (which reads the report from the failure's details): the Web UI then
      // marks a probe that could not tell as failed, not as a green "Completed".
      if (input.failUnknown === true && report.verdict === 'unknown' && report.state === 'IN_DOUBT') throw probeUnknownFailure(report);
      return report;
    },

    /**
     * While a call waits for an operator: returns once its record left IN_DOUBT at the generation in
     * doubt (settled directly by `settle resolve`, or by a late completion). Read-only; runs until
     * then, heartbeating, and ends when cancelled (the verdict came through the settleCall update).
     */
    async watchRecord(input: WatchRecordInput): Promise<WatchedRecord> {
      const activity = Context.current();
      return watchRecord(store, input, {
        ...WATCH_DEFAULTS,
        heartbeat: () => activity.heartbeat(),
        sleep: async (ms) => {
          await activity.sleep(ms);
        },
        onReadError: (err) => {
          activity.log.warn(`watching the record of ${input.key}: read failed, trying again`, { error: err.message });
        },
      });
    },
  };
}

/**
 * The approval an attempt executes under: null when the call needs none (its level on this worker
 * is below A3 and the workflow claims no approval); else the verified credential, or why it does
 * not count. The level is the worker's registry's (the operator's levels included), never the
 * workflow's; an approval a workflow claims for a lower-level call is verified all the same, so
 * no claim event names an approver a credential does not prove.
 */
function approvalOf(ctx: ActivityContext, input: ToolCallInput, call: ExecutingCall): ExecutionApproval | null {
  const level = ctx.registry.get(input.tool)?.level;
  if (level !== 'A3' && input.approval === undefined) return null;
  return approvalForExecution(input.approval?.credential, call, ctx.operatorKeys);
}
