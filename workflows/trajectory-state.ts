/**
 * A trajectory's in-memory state, the handlers that change it (updates, queries), and how it
 * shows to SREs: search attributes, current details. DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 * Handlers are methods here, as in Temporal's safe-message-handlers sample; trajectory.ts
 * registers them. Handlers that need activities (runTurn, settleCall) are passed in there.
 */
import { condition, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { forDetailsPane } from '../core/operator-details';
import { InputError } from '../core/errors';
import { fitObservation, REPORT_OBSERVATION_CHARS } from '../core/history-budget';
import type { RecordStateOrUnseen } from '../core/records';
import { RunTurnInputSchema } from '../core/trajectory-input';
import { parseArgs } from '../core/validation';
import type {
  ApproveCallInput,
  CallReport,
  CarriedState,
  FinishInput,
  PendingApproval,
  RunTurnInput,
  SettleCallInput,
} from './definitions';
import { Patches } from './patches';
import type { LaneChoice } from '../core/tools/lanes';
import type { WorkspaceHost } from '../core/hosts';
import {
  SA_IN_DOUBT_COUNT,
  SA_PENDING_APPROVALS,
  SA_PROBLEM_COUNT,
  SA_TRAJECTORY_STATUS,
  type TrajectoryStatus,
} from './search-attributes';

export class TrajectoryState {
  readonly reports: CallReport[];
  /** Validated arguments of every call, by key (compensators need them). */
  readonly argsByKey = new Map<string, Record<string, unknown>>();
  readonly turnsDone: Set<number>;
  /** Keys waiting for an operator's verdict. */
  readonly awaitingOperator = new Set<string>();
  /**
   * Operators' verdicts not yet taken by the call they settled: by key, the generation they
   * settled (null in histories from before verdicts carried one) and the record state after.
   */
  private readonly operatorVerdicts = new Map<string, { generation: number | null; state: RecordStateOrUnseen }>();
  /** A3 calls waiting for an approver, and the decisions received. */
  readonly approvals = new Map<string, ApproveCallInput>();
  readonly awaitingApproval = new Set<string>();
  /** The calls behind awaitingApproval's keys, as the pendingApprovals query and verifyApproval see them. */
  readonly pendingApprovals = new Map<string, PendingApproval>();
  /** Set by the finish update; the orchestrator driver ends when it is set and no turn runs. */
  finishRequest: FinishInput | null = null;
  waitingFor = 'starting';
  private status: TrajectoryStatus = 'running';
  private lastPublished: string | null = null;
  /** runTurn updates run one at a time in arrival order: each takes a ticket and waits for it. */
  private readonly turnQueue = { nextTicket: 0, serving: 0, running: 0 };
  /** The worker's lane per tool, asked once per run under PATCH_LOCAL_LANE (call-pipeline.ts lanesOf). */
  lanes: Promise<Readonly<Record<string, LaneChoice>>> | null = null;
  /** Where the workspace lives, asked once per run under PATCH_HOST_QUEUES (call-pipeline.ts hostOf); null: nothing is routed (the worker polls no host queue); unlocated: no host answered. */
  workspaceHost: Promise<WorkspaceHost | { unlocated: string } | null> | null = null;
  /**
   * Set once a local attempt met the trace of an earlier attempt (PATCH_LOCAL_TRACE, settled-call.ts):
   * the run's later calls go to the activity lane. Set only from recorded results, so a replay sets it
   * at the same point.
   */
  localLaneLeft = false;
  /** The bytes the current workflow task's local reads reserved (call-pipeline.ts roomForLocalRead); `task` is its history length. */
  localReads = { task: -1, bytes: 0 };

  constructor(
    carried?: CarriedState,
    /** Which patches hold for this run (patches.ts), decided when it starts. */
    readonly patches = new Patches(),
  ) {
    // The start request already carries the values (settle's client, a parent, continue-as-new):
    // the first publish upserts nothing that would only repeat them.
    this.lastPublished = startFingerprint();
    this.reports = carried?.reports ?? [];
    this.turnsDone = new Set(carried?.turnsDone ?? []);
  }

  // ── updates and their validators ──────────────────────────────────────────────────────────

  validateSettleCall(s: SettleCallInput): void {
    requireKey(s?.key, this.awaitingOperator, 'waiting for an operator');
    if (s.verdict !== 'applied' && s.verdict !== 'not_applied' && s.verdict !== 'partial')
      throw new InputError('verdict', 'be applied, not_applied or partial');
    requireText(s.operator, 'operator', 'a non-empty name');
    requireText(s.reason, 'reason', 'a non-empty explanation');
    requireCredential(s.credential, 'settle resolve');
    if (s.generation !== undefined && !(Number.isSafeInteger(s.generation) && s.generation >= 1)) {
      throw new InputError('generation', `be an integer ≥ 1 (got ${JSON.stringify(s.generation)})`);
    }
  }

  recordOperatorVerdict(key: string, generation: number | null, state: RecordStateOrUnseen): void {
    this.operatorVerdicts.set(key, { generation, state });
  }

  /** The record state an operator settled `generation` of `key` to, if they did. */
  operatorVerdictFor(key: string, generation: number): RecordStateOrUnseen | undefined {
    const verdict = this.operatorVerdicts.get(key);
    return verdict && (verdict.generation === null || verdict.generation === generation) ? verdict.state : undefined;
  }

  /** As operatorVerdictFor, and forgets it: each verdict settles one wait. */
  takeOperatorVerdict(key: string, generation: number): RecordStateOrUnseen | undefined {
    const state = this.operatorVerdictFor(key, generation);
    if (state !== undefined) this.operatorVerdicts.delete(key);
    return state;
  }

  validateApproveCall(a: ApproveCallInput): void {
    // A second decision on the same call is refused, saying who decided first.
    const earlier = typeof a?.key === 'string' ? this.approvals.get(a.key) : undefined;
    if (earlier) {
      throw new InputError(
        'key',
        `name a call still waiting for approval: ${a.key.slice(0, 16)}… was already ${earlier.decision === 'approve' ? 'approved' : 'denied'} by ${earlier.approver} (${earlier.reason})`,
      );
    }
    requireKey(a?.key, this.awaitingApproval, 'waiting for approval');
    if (a.decision !== 'approve' && a.decision !== 'deny') throw new InputError('decision', 'be approve or deny');
    requireText(a.approver, 'approver', 'a non-empty name');
    requireText(a.reason, 'reason', 'a non-empty explanation');
    requireCredential(a.credential, 'settle approve');
  }

  approveCall(a: ApproveCallInput): { decision: 'approve' | 'deny' } {
    this.approvals.set(a.key, a);
    return { decision: a.decision };
  }

  validateRunTurn(t: RunTurnInput): void {
    if (this.finishRequest) throw new InputError('turn', 'arrive before finish (this trajectory is finishing)');
    parseArgs(RunTurnInputSchema(), t, '');
  }

  /** Runs `turn` after every turn that arrived before it has finished. */
  async inTurnOrder<T>(turn: () => Promise<T>): Promise<T> {
    // Chaining one handler's work onto a previous handler's promise does not replay
    // deterministically; waiting for a ticket does.
    const ticket = this.turnQueue.nextTicket++;
    this.turnQueue.running++;
    try {
      await condition(() => this.turnQueue.serving === ticket);
      return await turn();
    } finally {
      this.turnQueue.serving++;
      this.turnQueue.running--;
    }
  }

  get turnsRunning(): number {
    return this.turnQueue.running;
  }

  validateFinish(f: FinishInput): void {
    if (f?.outcome !== 'completed' && f?.outcome !== 'failed') throw new InputError('outcome', 'be completed or failed');
    requireText(f.reason, 'reason', 'a non-empty explanation');
  }

  requestFinish(f: FinishInput): { accepted: true } {
    this.finishRequest = f;
    return { accepted: true };
  }

  /**
   * Once a turn is answered, reports keep only the head of each observation: they are what
   * queries, the result and continue-as-new carry (docs/design.md#history-budget).
   */
  compactReports(): void {
    for (const r of this.reports) {
      if (r.observation) r.observation = fitObservation(r.observation, REPORT_OBSERVATION_CHARS);
    }
  }

  // ── what SREs see ─────────────────────────────────────────────────────────────────────────

  /** Updates the search attributes and the current details shown in the Web UI. */
  publish(status: TrajectoryStatus, details: string, problems: number | null = null): void {
    this.status = status;
    this.waitingFor = details;
    setCurrentDetails(forDetailsPane(details)); // metadata, not a history event: free to update often
    const values = { status, inDoubt: this.reports.filter((r) => r.state === 'IN_DOUBT').length, approvals: this.awaitingApproval.size };
    const fingerprint = fingerprintOf(values.status, values.inDoubt, values.approvals);
    // Every upsert is a history event: skip unchanged values.
    if (fingerprint === this.lastPublished) return;
    this.lastPublished = fingerprint;
    upsertSearchAttributes([
      { key: SA_TRAJECTORY_STATUS, value: values.status },
      { key: SA_IN_DOUBT_COUNT, value: values.inDoubt },
      { key: SA_PENDING_APPROVALS, value: values.approvals },
      ...(problems !== null ? [{ key: SA_PROBLEM_COUNT, value: problems }] : []),
    ]);
  }

  /** Re-publishes counts without changing status (after a call's state changed). */
  refresh(details = this.waitingFor): void {
    this.publish(this.status, details);
  }
}

function fingerprintOf(status: string, inDoubt: number, approvals: number): string {
  return `${status}|${inDoubt}|${approvals}`;
}

/**
 * The published values this run started with (its start event: deterministic), or null unless
 * it started with all three.
 */
function startFingerprint(): string | null {
  const sa = workflowInfo().typedSearchAttributes;
  const status = sa.get(SA_TRAJECTORY_STATUS);
  const inDoubt = sa.get(SA_IN_DOUBT_COUNT);
  const approvals = sa.get(SA_PENDING_APPROVALS);
  if (status === undefined || inDoubt === undefined || approvals === undefined) return null;
  return fingerprintOf(status, inDoubt, approvals);
}

function requireKey(key: unknown, waiting: Set<string>, what: string): void {
  if (typeof key !== 'string' || !waiting.has(key)) {
    throw new InputError('key', `name a call of this trajectory that is ${what} (got ${JSON.stringify(key)})`);
  }
}

/** Its signature is verified by the worker before anything changes (an activity): here only that there is one. */
function requireCredential(value: unknown, minter: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InputError('credential', `be an operator credential (${minter} mints one with the operator's key, SETTLE_OPERATOR_KEY)`);
  }
}

function requireText(value: unknown, field: string, rule: string): void {
  if (typeof value !== 'string' || !value.trim()) throw new InputError(field, `be ${rule}`);
}
