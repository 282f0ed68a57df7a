/**
 * One agent trajectory = one workflow (workflow id = trajectory id). DETERMINISTIC CODE ONLY:
 * runs in Temporal's sandbox; every side effect goes through an activity.
 *
 * For each proposed call: validate → derive the key (here, so it is in history) → settled
 * activity → observation. An IN_DOUBT call is probed before anything is retried; a probe that
 * cannot decide leaves the call waiting for an operator (`settleCall` update), re-probing with
 * backoff meanwhile. Nothing here ever guesses about an effect it cannot see.
 */
import {
  condition,
  defineQuery,
  defineUpdate,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { deriveKey } from '../core/key';
import { InputError } from '../core/errors';
import { failed, type Observation } from '../core/observation';
import type { RecordStateOrUnseen } from '../core/records';
import { CATALOG, isToolName, type SideEffectLevel } from '../core/tools/catalog';
import { parseArgs } from '../core/validation';
import type { SettleActivities } from '../activities/index';
import { SA_IN_DOUBT_COUNT, SA_TRAJECTORY_STATUS, type TrajectoryStatus } from './search-attributes';

export interface ProposedCall {
  /** The model's tool-call id (unique within the turn). */
  call_id: string;
  tool: string;
  args: Record<string, unknown>;
}

export interface ScriptedTurn {
  turn: number;
  calls: ProposedCall[];
}

export interface TrajectoryInput {
  /** Absolute path of this trajectory's workspace directory. */
  workspace: string;
  /** The turns to run (orchestrator-scripted). */
  turns: ScriptedTurn[];
  /** Endpoint-record lease, renewed by heartbeats. Default 10 s. */
  leaseMs?: number;
  /** Backoff between retries of a busy or not-executed call: initial × 2^n, capped. Default 1 s, 30 s. */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Whether sandboxed commands may use the network (until capabilities carry `connect`). Default false. */
  network?: boolean;
}

export type CallResolution =
  /** A0: read-only, run without an endpoint record. */
  | 'read'
  | 'executed'
  | 'replayed'
  | 'settled_by_probe'
  | 'settled_by_operator'
  | 'invalid'
  | 'gave_up';

export interface CallReport {
  turn: number;
  callId: string;
  tool: string;
  /** Null when the call was rejected before a key could be derived. */
  key: string | null;
  level: SideEffectLevel | null;
  /** The endpoint record's state; NO_RECORD for read-only (A0) calls, which have none. */
  state: RecordStateOrUnseen | 'NO_RECORD';
  resolution: CallResolution | 'pending';
  /** Activity executions for this call (claims, probes). */
  attempts: number;
  observation: Observation | null;
}

export interface TrajectoryResult {
  trajectoryId: string;
  calls: CallReport[];
}

export interface SettleCallInput {
  key: string;
  verdict: 'applied' | 'not_applied';
  operator: string;
  reason: string;
}

export const callsQuery = defineQuery<CallReport[]>('calls');
export const settleCallUpdate = defineUpdate<{ state: string }, [SettleCallInput]>('settleCall');

const DEFAULT_LEASE_MS = 10_000;
/** Executions that ended certainly-not-executed (released, or settled NOT_EXECUTED) before giving up. */
const MAX_NOT_EXECUTED = 5;


const { probeToolCall, settleByOperator, runReadOnlyTool } = proxyActivities<SettleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function trajectoryWorkflow(input: TrajectoryInput): Promise<TrajectoryResult> {
  const trajectoryId = workflowInfo().workflowId;
  const leaseMs = input.leaseMs ?? DEFAULT_LEASE_MS;
  const backoffMs = (n: number) => Math.min((input.backoff?.initialMs ?? 1_000) * 2 ** n, input.backoff?.maxMs ?? 30_000);
  const reports: CallReport[] = [];
  /** Keys waiting for an operator, and those an operator has settled. */
  const awaitingOperator = new Set<string>();
  /** Operator verdicts applied, by key: the record's state afterwards. */
  const operatorSettled = new Map<string, RecordStateOrUnseen>();

  const { executeToolCall } = proxyActivities<SettleActivities>({
    startToCloseTimeout: '10 minutes',
    // Heartbeats renew the lease every leaseMs/3: a dead worker is noticed within one lease.
    heartbeatTimeout: leaseMs,
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
  });

  setHandler(callsQuery, () => reports);
  setHandler(
    settleCallUpdate,
    async (s) => {
      const result = await settleByOperator(s);
      if (result.state !== 'IN_DOUBT') operatorSettled.set(s.key, result.state as RecordStateOrUnseen);
      return result;
    },
    {
      validator: (s) => {
        if (!s || typeof s.key !== 'string' || !awaitingOperator.has(s.key)) {
          throw new InputError('key', `name a call of this trajectory that is waiting for an operator (got ${JSON.stringify(s?.key)})`);
        }
        if (s.verdict !== 'applied' && s.verdict !== 'not_applied') throw new InputError('verdict', 'be applied or not_applied');
        if (typeof s.operator !== 'string' || !s.operator.trim()) throw new InputError('operator', 'be a non-empty name');
        if (typeof s.reason !== 'string' || !s.reason.trim()) throw new InputError('reason', 'be a non-empty explanation');
      },
    },
  );

  const publish = (status: TrajectoryStatus, details: string) => {
    upsertSearchAttributes([
      { key: SA_TRAJECTORY_STATUS, value: status },
      { key: SA_IN_DOUBT_COUNT, value: reports.filter((r) => r.state === 'IN_DOUBT').length },
    ]);
    setCurrentDetails(details);
  };

  publish('running', 'starting');

  for (const turn of input.turns) {
    for (const call of turn.calls) {
      const report: CallReport = {
        turn: turn.turn,
        callId: call.call_id,
        tool: call.tool,
        key: null,
        level: null,
        state: 'UNSEEN',
        resolution: 'pending',
        attempts: 0,
        observation: null,
      };
      reports.push(report);

      // 1. Validate: a malformed call becomes an observation naming the field and rule.
      let args: Record<string, unknown>;
      try {
        if (!isToolName(call.tool)) throw new InputError('tool', `be one of ${Object.keys(CATALOG).join(', ')} (got ${JSON.stringify(call.tool)})`);
        report.level = CATALOG[call.tool].level;
        args = parseArgs(CATALOG[call.tool].args, call.args) as Record<string, unknown>;
        // 2. The key names the logical call; it is derived here so it shows in history.
        report.key = deriveKey({ trajectoryId, turn: turn.turn, callId: call.call_id, tool: call.tool, args });
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        report.resolution = 'invalid';
        report.observation = failed(`invalid call: ${err.message}`);
        continue;
      }
      const key = report.key;

      // 3a. Read-only (A0): no endpoint record, a retry simply reads again.
      if (report.level === 'A0') {
        report.attempts++;
        report.observation = await runReadOnlyTool.executeWithOptions(
          { startToCloseTimeout: '1 minute', summary: `${call.tool} ${describeArgs(args)} · key ${key.slice(0, 6)}…` },
          [{ tool: call.tool, args, workspace: input.workspace }],
        );
        report.state = 'NO_RECORD';
        report.resolution = 'read';
        continue;
      }

      // 3b. Settled execution loop.
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
        publish('running', `call ${key.slice(0, 8)}… not executed (${detail}); retrying`);
        await sleep(backoffMs(notExecuted - 1));
      };

      while (report.resolution === 'pending') {
        report.attempts++;
        publish('running', `turn ${turn.turn}: ${call.tool} ${describeArgs(args)} · key ${key.slice(0, 8)}…`);
        const outcome = await executeToolCall.executeWithOptions(
          {
            startToCloseTimeout: '10 minutes',
            heartbeatTimeout: leaseMs,
            retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
            summary: `${call.tool} ${describeArgs(args)} · key ${key.slice(0, 6)}…`,
          },
          [{ key, turn: turn.turn, callId: call.call_id, tool: call.tool, args, workspace: input.workspace, leaseMs, network: input.network ?? false }],
        );
        switch (outcome.kind) {
          case 'completed':
            report.state = 'COMPLETED';
            report.observation = outcome.result;
            report.resolution =
              settledBy === 'probe' ? 'settled_by_probe' : settledBy === 'operator' ? 'settled_by_operator' : outcome.replayed ? 'replayed' : 'executed';
            break;
          case 'busy':
            report.state = 'IN_FLIGHT';
            publish('running', `call ${key.slice(0, 8)}… is IN_FLIGHT elsewhere until ${outcome.leaseUntil}; retrying`);
            await sleep(backoffMs(busyRounds++));
            break;
          case 'released':
            report.state = 'NOT_EXECUTED';
            await retryOrGiveUp(outcome.detail);
            break;
          case 'in_doubt': {
            report.state = 'IN_DOUBT';
            const settled = await settle(key, report);
            // Only a settlement to COMPLETED resolves the call; NOT_EXECUTED means claim and run it.
            settledBy = settled.state === 'COMPLETED' ? settled.by : null;
            if (settled.state === 'NOT_EXECUTED') await retryOrGiveUp(`settled NOT_EXECUTED by ${settled.by}`);
            break;
          }
        }
      }

      publish('running', `turn ${turn.turn}: ${call.tool} ${report.resolution}`);
    }
  }
  publish('completed', `completed ${reports.length} calls`);
  return { trajectoryId, calls: reports };

  /** Probes until the record leaves IN_DOUBT; escalates to an operator while the probe cannot tell. */
  async function settle(key: string, report: CallReport): Promise<{ by: 'probe' | 'operator'; state: RecordStateOrUnseen }> {
    let round = 0;
    while (true) {
      publish('waiting_probe', `call ${key.slice(0, 8)}… IN_DOUBT: probing (round ${round + 1})`);
      report.attempts++;
      const probe = await probeToolCall({ key, workspace: input.workspace });
      if (probe.state !== 'IN_DOUBT') {
        report.state = probe.state;
        return { by: 'probe', state: probe.state };
      }
      awaitingOperator.add(key);
      publish(
        'waiting_operator',
        `call ${key.slice(0, 8)}… IN_DOUBT, probe says unknown (${probe.detail}). ` +
          `Settle with: settle resolve ${key} --as applied|not-applied --operator NAME --reason TEXT`,
      );
      const delayMs = Math.min(5_000 * 2 ** round++, 10 * 60_000);
      if (await condition(() => operatorSettled.has(key), delayMs)) {
        awaitingOperator.delete(key);
        const state = operatorSettled.get(key)!;
        report.state = state;
        return { by: 'operator', state };
      }
    }
  }
}

function describeArgs(args: Record<string, unknown>): string {
  const target = args.path ?? args.command ?? args.pattern;
  const text = typeof target === 'string' ? target : '';
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
