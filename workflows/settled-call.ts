/**
 * The settled execution of one A2/A3 call: attempt it through its endpoint record until it
 * resolves. DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 *   attempt ─ completed ─────────────────────────────────▶ resolved (executed · replayed · settled)
 *           ├ busy (another executor holds the lease) ──▶ back off, attempt again
 *           ├ released (proved not executed) ───────────▶ back off, attempt again (at most 5 times)
 *           ├ denied (capability) ──────────────────────▶ resolved (denied)
 *           └ in doubt ─▶ probe ─ applied ──────────────▶ attempt again (replays the settled result)
 *                               ├ not applied ──────────▶ back off, attempt again
 *                               └ unknown ──▶ operator (re-probing meanwhile)
 *                     (tool declares no probe) ──▶ operator (no re-probing)
 *
 * Nothing here guesses about an effect it cannot see (docs/design.md#probes).
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  TimeoutFailure,
} from '@temporalio/workflow';
import { ACTIVITY_LANE, type LaneChoice } from '../core/tools/lanes';
import type { WorkspaceHost } from '../core/hosts';
import { PATCH_LOCAL_TRACE } from './patches';
import { FAILURE } from '../core/failures';
import { describeArgs } from '../core/calls';
import { failed } from '../core/observation';
import { codeSpan, SETTLE_COMMAND, waitDetails } from '../core/operator-details';
import { declaresProbe } from '../core/tools/catalog';
import type { CallOutcome, RecordState, RecordStateOrUnseen } from '../core/records';
import type { Observation } from '../core/observation';
import type { SettleActivities } from '../activities/index';
import type { WatchedRecord } from '../activities/settled/watch-record';
import type { ProbeReport } from '../activities/factory/settled-calls';
import type { CallReport, SettleCallInput } from './definitions';
import type { CallContext } from './call-context';
import type { TrajectoryState } from './trajectory-state';

/**
 * Endpoint-record lease. Renewed every leaseMs/3 (one statement a second per running call at this
 * default), and Temporal's heartbeat timeout equals it: a dead worker's call is claimed again,
 * found IN_DOUBT and probed within a few seconds.
 */
export const DEFAULT_LEASE_MS = 3_000;
/** Executions that ended certainly-not-executed (released, or settled NOT_EXECUTED) before giving up. */
const MAX_NOT_EXECUTED = 5;

const PROBE_OPTIONS = {
  // A probe is short and repeatable: when its worker dies, another one probes again soon.
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
} as const;

const { executeToolCall } = proxyActivities<SettleActivities>({ startToCloseTimeout: '10 minutes' });
// The local lane: the same activity, run inside the workflow task (a marker, no task round trip).
const { executeToolCall: executeToolCallLocally } = proxyLocalActivities<SettleActivities>({ startToCloseTimeout: '2 seconds' });
const { probeToolCall, settleByOperator } = proxyActivities<SettleActivities>(PROBE_OPTIONS);

const WATCH_OPTIONS = {
  // Runs for as long as the wait: attempts that end (a day, or a dead worker noticed by its
  // missing heartbeat) are retried without a history event; only its end is recorded.
  startToCloseTimeout: '1 day',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  // Read-only: nothing to wait for when the verdict came through the update instead.
  cancellationType: ActivityCancellationType.TRY_CANCEL,
} as const;
const { watchRecord } = proxyActivities<SettleActivities>(WATCH_OPTIONS);

/**
 * Patch id: a call refused by the worker (capability or policy) whose key has a record — an earlier
 * attempt claimed it — reports the record's state instead of NO_RECORD, and while that record's
 * effect is unknown (IN_FLIGHT, IN_DOUBT) waits for it to be settled, then attempts again. Asked
 * only when a refusal names a record (activities before it never did), so other runs record no marker.
 */
export const PATCH_DENIED_RECORD = 'denied-with-record-v1';

/**
 * How a settled activity (execution or probe) reacts when its trajectory is cancelled: it runs
 * to its end, and the workflow waits for it. Its effect may complete at any moment, and the
 * compensators can only undo what the workflow knows was done.
 */
const SETTLED_CANCELLATION = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;

/** Who settled an IN_DOUBT record, and to what. */
interface Settlement {
  by: 'probe' | 'operator';
  state: RecordStateOrUnseen;
}

/** One settled call: what it is, and what the attempts carry. */
export interface SettledCallOptions {
  /** The call's idempotency key. */
  key: string;
  /** The validated arguments it executes with. */
  args: Record<string, unknown>;
  /** The call on the timeline: tool, target, key. */
  summary: string;
  /** For an A3 call: the approval and its operator credential, which the activity verifies. */
  approval?: { approver: string; reason: string; credential?: unknown };
  /** The activity counts the proposal; idempotent across attempts. */
  countProposal?: boolean;
  /** Whether a probe can settle it: a team tool's, from the worker's registry; absent: the catalog's. */
  probes?: boolean;
  /** Where its attempts run (core/tools/lanes.ts); absent: the activity lane. */
  lane?: LaneChoice;
  /**
   * The host holding its workspace (core/hosts.ts): attempts and probes run on that host's own
   * queue, and carry the host so a worker elsewhere (a local attempt included) refuses them.
   * Absent: the shared queue.
   */
  host?: WorkspaceHost;
}

export class SettledCall {
  private notExecuted = 0;
  private busyRounds = 0;
  /** Set when the last IN_DOUBT was settled COMPLETED: the next attempt replays that result. */
  private settledBy: Settlement['by'] | null = null;
  /** Workflow time when this call began waiting for an operator (shown in the current details). */
  private waitingSince: number | null = null;
  /** The generation whose operator wait was last logged (one line per wait, not per probe round). */
  private loggedWaitFor: number | null = null;
  /** The last generation found in doubt (named in the details when the call resolves). */
  private inDoubtAt: number | null = null;

  private readonly key: string;
  private readonly args: Record<string, unknown>;
  private readonly summary: string;
  private readonly approval: SettledCallOptions['approval'];
  private readonly countProposal: boolean;
  private readonly probes: boolean | undefined;
  /** The lane of the next attempt: the tool's, until an attempt outlives the local bound. */
  private lane: LaneChoice;
  private readonly host: WorkspaceHost | undefined;
  /** The activity options that send an attempt or a probe to the workspace's host (none: the shared queue). */
  private readonly onHost: { taskQueue?: string };
  private readonly attemptOnHost: { taskQueue?: string; scheduleToStartTimeout?: number };
  /** What the call waits for while its workspace's host took no attempt in time (null: it did). */
  private hostAway: string | null = null;

  constructor(
    private readonly ctx: CallContext,
    private readonly report: CallReport,
    options: SettledCallOptions,
  ) {
    this.key = options.key;
    this.args = options.args;
    this.summary = options.summary;
    this.approval = options.approval;
    this.countProposal = options.countProposal ?? false;
    this.probes = options.probes;
    this.lane = options.lane ?? ACTIVITY_LANE;
    this.host = options.host;
    this.onHost = options.host ? { taskQueue: options.host.queue } : {};
    // Only an attempt notices a queue no worker polls (a dead host): a probe may wait there.
    this.attemptOnHost = options.host ? { ...this.onHost, scheduleToStartTimeout: HOST_WAIT_MS } : {};
  }

  private get state(): TrajectoryState {
    return this.ctx.state;
  }

  /** Attempts the call until it resolves; the report carries the outcome. */
  async run(): Promise<CallReport> {
    while (this.report.resolution === 'pending') {
      let outcome: CallOutcome<Observation>;
      // No promise of its own for the in-doubt failure (patches.ts PATCH_LEAN_CALLS).
      try {
        outcome = await this.attempt();
      } catch (err) {
        if (!(this.host && isHostAway(err))) outcome = inDoubtOutcome(err);
        else {
          const settled = await this.awayFromHost(this.host);
          if (!settled) continue;
          outcome = settled;
        }
      }
      this.hostAway = null;
      switch (outcome.kind) {
        case 'completed':
          this.completed(outcome.result, outcome.replayed);
          break;
        case 'busy':
          await this.busy(outcome.leaseUntil);
          break;
        case 'released':
          this.report.state = 'NOT_EXECUTED';
          await this.retryOrGiveUp(outcome.detail);
          break;
        case 'denied':
          if (outcome.record && patched(PATCH_DENIED_RECORD))
            await this.deniedWithRecord(outcome.component, outcome.reason, outcome.record);
          else deniedByCapability(this.report, outcome.component, outcome.reason);
          break;
        case 'in_doubt':
          await this.inDoubt(outcome.generation);
          break;
      }
    }
    // Current details, not a command: the call and its outcome, and whether it was in doubt (a
    // local attempt's marker shows no outcome badge in the Web UI; these details do).
    const doubted = this.inDoubtAt !== null ? ` (was IN_DOUBT at gen ${this.inDoubtAt})` : '';
    this.state.refresh(`turn ${this.report.turn}: ${this.summary} · ${this.report.resolution}${doubted}`);
    return this.report;
  }

  /**
   * One activity execution: claim → plan → intent → effect → complete, on some worker. An attempt
   * that ends IN_DOUBT rejects with `SettleInDoubt` (see inDoubtOutcome).
   */
  private attempt(): Promise<CallOutcome<Observation>> {
    const { input } = this.ctx;
    const leaseMs = input.leaseMs ?? DEFAULT_LEASE_MS;
    this.report.attempts++;
    // While the workspace's host is away, its details stay what the call waits for.
    this.state.publish('running', this.hostAway ?? `turn ${this.report.turn}: ${this.summary}`);
    const request = this.request(leaseMs);
    const summary = this.attemptSummary();
    const asActivity = () =>
      executeToolCall.executeWithOptions(
        {
          startToCloseTimeout: '10 minutes',
          // Heartbeats renew the lease every leaseMs/3: a dead worker is noticed within one lease.
          heartbeatTimeout: leaseMs,
          // A retry after a heartbeat timeout (dead worker) should come at once; after a database
          // error, soon enough to notice the database's return within seconds.
          retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
          summary,
          cancellationType: SETTLED_CANCELLATION,
          ...this.attemptOnHost,
        },
        [request],
      );
    if (this.lane.lane === 'activity' || this.state.localLaneLeft) return asActivity();
    // The local lane: one try within the tool's bound, inside the workflow task. A dead worker is
    // noticed by the workflow task's timeout; the task runs again elsewhere, and this attempt's
    // re-run meets the record: busy while the dead holder's lease lasts (answered at once, not
    // waited out in the task), then IN_DOUBT and probed. Meeting that trace moves the call, and
    // the run's later calls, to the activity lane (leaveLocalLane). An attempt that fails otherwise
    // (it outlived its bound, the database was away) goes on in the activity lane: its claim finds
    // what this one left, a lease still held included. A workflow task on another host than the
    // workspace's is refused there (SettleWrongHost, nothing claimed) and goes on the same way, to
    // the workspace's host.
    return executeToolCallLocally
      .executeWithOptions(
        { startToCloseTimeout: this.lane.boundMs, retry: { maximumAttempts: 1 }, summary, cancellationType: SETTLED_CANCELLATION },
        [request],
      )
      .then(
        // The activity's claim waits out the lease (one lease at most) and probes a dead holder's call.
        (outcome) => (outcome.kind === 'busy' && this.leaveLocalLane() ? asActivity() : outcome),
        (err: unknown) => {
          if (isCancellation(err)) throw err;
          if (isInDoubt(err)) {
            this.leaveLocalLane();
            throw err;
          }
          this.lane = ACTIVITY_LANE;
          return asActivity();
        },
      );
  }

  /**
   * A local attempt met the trace of an earlier attempt of this call (its record busy under another
   * holder's lease, or IN_DOUBT): most often a worker that died holding the workflow task. From
   * here on this call and the run's later calls run in the activity lane, where a further death
   * costs an activity retry instead of another workflow task timeout. False for a history recorded
   * before PATCH_LOCAL_TRACE: it stays in the local lane as it did.
   */
  private leaveLocalLane(): boolean {
    if (!this.state.localLaneLeft && !patched(PATCH_LOCAL_TRACE)) return false;
    this.state.localLaneLeft = true;
    this.lane = ACTIVITY_LANE;
    return true;
  }

  /** The executeToolCall input of this call's next attempt. */
  private request(leaseMs: number) {
    const { input } = this.ctx;
    return {
      key: this.key,
      turn: this.report.turn,
      callId: this.report.callId,
      tool: this.report.tool,
      args: this.args,
      workspace: input.workspace,
      leaseMs,
      network: input.network ?? false,
      ...(this.approval ? { approval: this.approval } : {}),
      ...(input.capability ? { capability: input.capability } : {}),
      ...(input.keyMode ? { keyMode: input.keyMode } : {}),
      ...(this.countProposal ? { countProposal: true } : {}),
      ...(this.host ? { host: this.host.host } : {}),
    };
  }

  /**
   * No worker of the workspace's host took the attempt within HOST_WAIT_MS (the host is down, or
   * its queue has no poller). The call runs only there; meanwhile one attempt on the shared queue
   * replays a result an operator settled (`settle resolve`) or a late completion stored: a worker
   * on another host refuses anything else (SettleWrongHost) and the call waits again (null).
   */
  private async awayFromHost(host: WorkspaceHost): Promise<CallOutcome<Observation> | null> {
    this.hostAway =
      `call ${this.short}… waits for host ${host.host}, which holds its workspace: no worker took it from queue ${host.queue} ` +
      `within ${HOST_WAIT_MS / 1000} s (the host is down, or its queue has no poller). It runs only there; an operator may settle it meanwhile.`;
    this.state.publish('running', this.hostAway);
    this.report.attempts++;
    try {
      return await executeToolCall.executeWithOptions(
        {
          startToCloseTimeout: '1 minute',
          heartbeatTimeout: this.ctx.input.leaseMs ?? DEFAULT_LEASE_MS,
          retry: { maximumAttempts: 1 },
          summary: `${this.summary} · replay if settled (host ${host.host} away)`,
          cancellationType: SETTLED_CANCELLATION,
        },
        [this.request(this.ctx.input.leaseMs ?? DEFAULT_LEASE_MS)],
      );
    } catch (err) {
      const doubt = inDoubtDetails(err);
      if (doubt) return doubt;
      if (!isWrongHost(err)) throw err;
      await sleep(this.maxBackoffMs);
      return null;
    }
  }

  /** What this attempt is, on the timeline: the first run, a run again after NOT_EXECUTED, or a replay of a settled result. */
  private attemptSummary(): string {
    if (this.settledBy) return `${this.summary} · replay: settled applied by ${this.settledBy}`;
    if (this.notExecuted > 0) return `${this.summary} · run again: not executed ${this.notExecuted}×`;
    return this.summary;
  }

  private completed(result: Observation, replayed: boolean): void {
    this.report.state = 'COMPLETED';
    this.report.observation = result;
    this.report.resolution =
      this.settledBy === 'probe'
        ? 'settled_by_probe'
        : this.settledBy === 'operator'
          ? 'settled_by_operator'
          : replayed
            ? 'replayed'
            : 'executed';
  }

  private async busy(leaseUntil: string): Promise<void> {
    this.report.state = 'IN_FLIGHT';
    this.state.publish('running', `call ${this.short}… is IN_FLIGHT elsewhere until ${leaseUntil}; retrying`);
    this.busyRounds++;
    // Claim again just after the lease would lapse: if its holder died, that claim finds it
    // IN_DOUBT at once; if it lives, the lease was renewed and this costs one more claim per lease.
    const untilLapse = Date.parse(leaseUntil) - Date.now();
    await sleep(
      Number.isFinite(untilLapse) ? Math.min(Math.max(100, untilLapse + 100), this.maxBackoffMs) : this.backoffMs(this.busyRounds - 1),
    );
  }

  private async inDoubt(generation: number): Promise<void> {
    this.report.state = 'IN_DOUBT';
    this.inDoubtAt = generation;
    const settled = await this.settleInDoubt(generation);
    // Only a settlement to COMPLETED resolves the call; NOT_EXECUTED means claim and run it.
    this.settledBy = settled.state === 'COMPLETED' ? settled.by : null;
    if (settled.state === 'NOT_EXECUTED') await this.retryOrGiveUp(`settled NOT_EXECUTED by ${settled.by}`);
  }

  /**
   * This worker refused the call, but an earlier attempt claimed its key (it may have died mid-effect
   * on a worker that allowed it). A refusal must not hide that: while the record's effect is unknown
   * the call waits — IN_FLIGHT until its holder finishes or the lease sweeper turns its lapsed lease
   * IN_DOUBT, IN_DOUBT until an operator (or a late completion) settles it — then is attempted again:
   * a worker that allows it replays a COMPLETED result or runs a NOT_EXECUTED call; one that still
   * refuses ends it here, reporting the settled record. No probe runs from here: the refusing
   * worker's policy may not allow touching the call's workspace at all.
   */
  private async deniedWithRecord(
    component: string,
    reason: string,
    record: { state: RecordState; generation: number; settledBy?: string | null },
  ): Promise<void> {
    const refusal = refusalText(component, reason);
    const { generation } = record;
    this.report.state = record.state;
    if (record.state === 'IN_FLIGHT') {
      this.state.publish(
        'running',
        `call ${this.short}… refused here (${refusal}) and IN_FLIGHT at generation ${generation} from an earlier attempt: waiting for its holder to finish or its lease to lapse`,
      );
      await watchRecord.executeWithOptions(
        { ...WATCH_OPTIONS, summary: `watch ${this.short}… gen ${generation} while IN_FLIGHT (refused here: an earlier attempt holds it)` },
        [{ key: this.key, generation, state: 'IN_FLIGHT' }],
      );
      return;
    }
    if (record.state === 'IN_DOUBT') {
      const settled = await this.awaitOperator(
        generation,
        null,
        `this worker refuses to run it again (${refusal}), so it cannot be probed here`,
      );
      this.settledBy = settled.state === 'COMPLETED' ? settled.by : null;
      return;
    }
    this.report.resolution = 'denied';
    this.report.observation = failed(
      `${refusal}; an earlier attempt's record is ${record.state} at generation ${generation}` +
        (record.settledBy ? `, settled by ${record.settledBy}` : ''),
    );
  }

  /** The effect certainly did not happen: run again after a backoff, a bounded number of times. */
  private async retryOrGiveUp(detail: string): Promise<void> {
    if (++this.notExecuted >= MAX_NOT_EXECUTED) {
      this.report.resolution = 'gave_up';
      this.report.observation = failed(`not executed after ${this.notExecuted} attempts; last: ${detail}`);
      return;
    }
    this.state.publish('running', `call ${this.short}… not executed (${detail}); retrying`);
    await sleep(this.backoffMs(this.notExecuted - 1));
  }

  /** Probes until the record leaves IN_DOUBT; escalates to an operator while the probe cannot tell. */
  private async settleInDoubt(generation: number): Promise<Settlement> {
    const { state, input } = this.ctx;
    const key = this.key;
    if (!(this.probes ?? declaresProbe(this.report.tool, this.args))) {
      // Nothing could ever settle it but a person: wait for one, without timers or re-probing.
      return this.awaitOperator(generation, null, 'this tool declares no probe: its effect cannot be observed by settle');
    }
    let round = 0;
    while (true) {
      state.publish('waiting_probe', `call ${this.short}… IN_DOUBT: probing (round ${round + 1}) · ${this.summary}`);
      this.report.probes = (this.report.probes ?? 0) + 1;
      // failUnknown: a probe that cannot tell fails (SettleProbeUnknown, its report in the details),
      // so the Web UI never shows it green; an older worker returns the report instead. Either
      // way the same report, and the same commands after it (no patch: the input is no command).
      const probe = await probeToolCall
        .executeWithOptions(
          {
            ...PROBE_OPTIONS,
            cancellationType: SETTLED_CANCELLATION,
            summary: `probe ${this.summary} · after IN_DOUBT (gen ${generation}, round ${round + 1})`,
            // The evidence is on the workspace's host: a probe anywhere else answers unknown.
            ...this.onHost,
          },
          [{ key, workspace: input.workspace, failUnknown: true }],
        )
        .catch((err: unknown) => {
          const report = probeUnknownReport(err);
          if (report) return report;
          throw err;
        });
      if (probe.state !== 'IN_DOUBT') {
        this.report.state = probe.state;
        // Settled before this probe looked: by the probe, a late completion, or an operator's
        // direct `settle resolve` (the record names who).
        return { by: probe.settledBy?.startsWith('operator:') ? 'operator' : 'probe', state: probe.state };
      }
      if (probe.final) {
        // The probe says no later probe could tell either (e.g. a shell command that died mid-run):
        // wait for a person, without timers or re-probing.
        return this.awaitOperator(probe.generation, null, `the probe cannot tell, and no later probe could: ${codeSpan(probe.detail)}`);
      }
      const delayMs = Math.min(5_000 * 2 ** round++, 10 * 60_000);
      const settled = await this.awaitOperator(probe.generation, delayMs, `the probe cannot tell: ${codeSpan(probe.detail)}`);
      if (settled) return settled;
    }
  }

  /**
   * Waits for an operator's verdict on `generation` (at most `timeoutMs`, null: for as long as it
   * takes). Only a verdict on this generation settles it: one given on an earlier generation says
   * nothing about the execution that is in doubt now.
   */
  private async awaitOperator(generation: number, timeoutMs: null, why: string): Promise<Settlement>;
  private async awaitOperator(generation: number, timeoutMs: number, why: string): Promise<Settlement | null>;
  private async awaitOperator(generation: number, timeoutMs: number | null, why: string): Promise<Settlement | null> {
    const { state } = this.ctx;
    const key = this.key;
    state.awaitingOperator.add(key);
    if (this.loggedWaitFor !== generation) {
      // Once per generation in doubt (probe rounds start a new wait each); a log line, not a command.
      this.loggedWaitFor = generation;
      log.warn('call waits for an operator', {
        event: 'operator_wait',
        trajectoryId: this.ctx.trajectoryId,
        turn: this.report.turn,
        callId: this.report.callId,
        key,
        generation,
        tool: this.report.tool,
        why,
        probesAgain: timeoutMs !== null,
      });
    }
    // Current details are metadata, not history events.
    state.publish('waiting_operator', this.operatorDetails(why, generation));
    const verdict = () => state.operatorVerdictFor(key, generation) !== undefined;
    if (timeoutMs === null) {
      const watched = await this.verdictOrSettledRecord(generation, verdict);
      if (watched) {
        // Settled on the record, not through the update: any verdict that arrived meanwhile is moot.
        state.awaitingOperator.delete(key);
        state.takeOperatorVerdict(key, generation);
        this.report.state = watched.state;
        return { by: watched.settledBy?.startsWith('operator:') ? 'operator' : 'probe', state: watched.state };
      }
    } else if (!(await condition(verdict, timeoutMs, { summary: `probe ${this.short}… again` }))) return null;
    state.awaitingOperator.delete(key);
    const settled = state.takeOperatorVerdict(key, generation)!;
    this.report.state = settled;
    return { by: 'operator', state: settled };
  }

  /** Waits for the update's verdict or, whichever comes first, the record settled some other way (null: the verdict). */
  private async verdictOrSettledRecord(generation: number, verdict: () => boolean): Promise<WatchedRecord | null> {
    const scope = new CancellationScope();
    const given = scope.run(() => condition(verdict)).then(() => null);
    const watched = scope.run(() =>
      watchRecord.executeWithOptions(
        { ...WATCH_OPTIONS, summary: `watch ${this.short}… gen ${generation} until it is settled (the record, read every ≤ 60 s)` },
        [{ key: this.key, generation }],
      ),
    );
    try {
      return await Promise.race([given, watched]);
    } finally {
      // The loser is cancelled (the watch stops at its next heartbeat); its rejection is expected.
      scope.cancel();
      given.catch(() => undefined);
      watched.catch(() => undefined);
    }
  }

  /** The current details while an operator must decide: a one-line summary, then the exact commands. */
  private operatorDetails(why: string, generation: number): string {
    this.waitingSince ??= Date.now();
    // Two lines each (a shell continues after `\`): the UI's details pane cuts lines longer than ~90 characters.
    // Fenced by `--generation`: a pasted command settles the execution shown here, never a later one.
    // The operator is the one whose key signs (SETTLE_OPERATOR_KEY): no name to fill in.
    const resolve = (as: string) =>
      `${SETTLE_COMMAND} resolve ${this.key} \\\n  --generation ${generation} --as ${as} --reason 'what you checked'`;
    return waitDetails({
      headline: 'waiting for an operator',
      tool: this.report.tool,
      target: describeArgs(this.args),
      key: this.key,
      sinceMs: this.waitingSince,
      deadline: null,
      explanation:
        `Call ${codeSpan(this.report.callId)} (turn ${this.report.turn}) is IN_DOUBT at generation ${generation}: it may have taken effect, and ${why}. ` +
        'Check whether it did, then settle it with one of the commands above.',
      commands: [resolve('applied'), resolve('not-applied'), resolve('partial')],
    });
  }

  private backoffMs(n: number): number {
    return Math.min((this.ctx.input.backoff?.initialMs ?? 1_000) * 2 ** n, this.maxBackoffMs);
  }

  private get maxBackoffMs(): number {
    return this.ctx.input.backoff?.maxMs ?? 30_000;
  }

  private get short(): string {
    return this.key.slice(0, 8);
  }
}

/** The operator's verdict, applied by an activity (it writes the record). Used by the settleCall update handler. */
export async function applyOperatorVerdict(state: TrajectoryState, s: SettleCallInput): Promise<{ state: string }> {
  // The activity verifies the operator credential before it writes (activities/settled/operator-settlement.ts).
  const result = await settleByOperator(s);
  // Histories recorded before verdicts carried a generation have none: it applies to the wait in progress.
  if (result.state !== 'IN_DOUBT') state.recordOperatorVerdict(s.key, result.generation ?? null, result.state);
  return { state: result.state };
}

/** How long an attempt waits on its workspace host's queue before the call says the host is away. */
const HOST_WAIT_MS = 30_000;

/** An attempt no worker of the workspace's host took in time (schedule-to-start timeout). */
function isHostAway(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START';
}

/** A worker on another host than the workspace's refused the attempt, touching nothing. */
function isWrongHost(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && cause.type === FAILURE.WrongHost;
}

/** The outcome an IN_DOUBT attempt failed with (executeToolCall fails it); any other failure is rethrown. */
function inDoubtOutcome(err: unknown): CallOutcome<Observation> {
  const outcome = inDoubtDetails(err);
  if (outcome) return outcome;
  throw err;
}

function isInDoubt(err: unknown): boolean {
  return inDoubtDetails(err) !== null;
}

/** The report a probe that answered unknown failed with (FAILURE.ProbeUnknown), or null for any other error. */
function probeUnknownReport(err: unknown): ProbeReport | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === FAILURE.ProbeUnknown) {
    const report = cause.details?.[0] as ProbeReport | undefined;
    if (report?.verdict === 'unknown' && report.state === 'IN_DOUBT' && Number.isSafeInteger(report.generation)) return report;
  }
  return null;
}

function inDoubtDetails(err: unknown): CallOutcome<Observation> | null {
  // A regular activity's failure wraps the activity's own; a local activity's may come unwrapped.
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === FAILURE.InDoubt) {
    const outcome = cause.details?.[0] as CallOutcome<Observation> | undefined;
    if (outcome?.kind === 'in_doubt' && Number.isSafeInteger(outcome.generation)) return outcome;
  }
  return null;
}

/** The capability (or, component `policy`, the worker's operator) refused this access: nothing was claimed or touched. */
export function deniedByCapability(report: CallReport, component: string, reason: string): CallReport {
  report.resolution = 'denied';
  report.state = 'NO_RECORD';
  report.observation = failed(refusalText(component, reason));
  return report;
}

function refusalText(component: string, reason: string): string {
  if (component === 'policy') return `denied by the worker's policy: ${reason}`;
  if (component === 'host') return `not run: ${reason}; nothing was claimed`;
  return `denied by capability (${component}): ${reason}`;
}
