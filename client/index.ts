/**
 * The orchestrator's side: a typed client for trajectories. Wraps Temporal's client so an
 * orchestrator never handles update names, ids or payload shapes by hand.
 *
 *   const settle = await SettleClient.connect({ address: 'localhost:7233' });
 *   await settle.start('ticket-4711', { workspace: '/workspaces/ticket-4711' });
 *   const { calls } = await settle.runTurn('ticket-4711', 0, [{ call_id: 'c1', tool: 'file_view', args: {...} }]);
 *   await settle.finish('ticket-4711', 'completed', 'task done');
 */
import { DEFAULT_TASK_QUEUE, loadTemporalTarget, type TargetOverrides } from './connection';
import {
  Client,
  Connection,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
  type WorkflowStartOptions,
  type WorkflowUpdateHandle,
  WorkflowUpdateStage,
} from '@temporalio/client';
import {
  approveCallUpdate,
  callsQuery,
  finishUpdate,
  pendingApprovalsQuery,
  runTurnUpdate,
  runTurnUpdateId,
  settleCallUpdate,
  type FinishInput,
  type PendingApproval,
  type ProposedCall,
  type RunTurnResult,
  type SettleCallInput,
  type TrajectoryResult,
} from '../workflows/definitions';
import type { trajectoryWorkflow } from '../workflows/trajectory';
import { initialSearchAttributes, SA_IN_DOUBT_COUNT, SA_PENDING_APPROVALS, SA_TRAJECTORY_STATUS } from '../workflows/search-attributes';
// CommonJS package: its namespace comes through the default export under ESM.
import proto from '@temporalio/proto';
const { temporal } = proto;
import type { TrajectoryRequest } from '../core/trajectory-input';
import { parseArgs } from '../core/validation';
import { InputError } from '../core/errors';
import type { OperatorClaim, OperatorCredential } from '../core/operator-credential';
import { APPROVAL_DEADLINE_APPROVER, approvalClaim, type ApprovalDecision } from '../core/approval-claim';
import { isReservedChildId, RESERVED_CHILD_ID_RULE } from '../core/trajectory-ids';
import { LOCAL_LANE_TASK_TIMEOUT_MS } from '../core/tools/lanes';
import { NoWorkerError } from './no-worker';
import {
  anyPollerLive,
  bySubAgentId,
  STATUS_DEADLINE_MS,
  subAgentsQuery,
  trajectoryStatusReport,
  type SubAgentStatus,
  type TrajectoryReads,
  type TrajectoryStatusReport,
} from './status/report';

export { deadlineExceeded, STATUS_DEADLINE_MS, type SubAgentStatus, type TrajectoryStatusReport } from './status/report';

export { DEFAULT_TASK_QUEUE } from './connection';

export interface StartOptions {
  /** The workflow's static summary in the Web UI (default: what the input says it does). */
  summary?: string;
  /**
   * The workflow task timeout, ms (default 3 000, LOCAL_LANE_TASK_TIMEOUT_MS): what notices a
   * worker that died in the middle of a local-lane call. A host that cannot finish a workflow
   * task well within it (a starved one) meets spurious timeouts, which Temporal retries with a
   * growing backoff: raise it there, or put its tools in the activity lane (SETTLE_LANES).
   */
  workflowTaskTimeoutMs?: number;
}

/** A one-line static summary from the input: who drives it and where it works. */
export function trajectorySummary(input: TrajectoryRequest): string {
  const driver = input.model
    ? `model ${input.model.model}: ${input.model.task.replace(/\s+/g, ' ').slice(0, 80)}`
    : input.turns
      ? `${input.turns.length} scripted turn(s)`
      : 'orchestrator-driven (runTurn updates)';
  return `settle trajectory · ${driver} · workspace ${input.workspace}`;
}

/**
 * How settle's client starts a trajectory (`client.workflow.start('trajectoryWorkflow', …)`):
 * the trajectory id as workflow id, the static summary, and the initial search attributes, so
 * the Web UI and `SettleTrajectoryStatus="running"` queries see it from the first moment and the
 * workflow upserts nothing to repeat them. Exported for callers that start trajectories on a
 * Temporal client of their own (bench/e2e.ts); the input is not checked here (SettleClient.start does).
 */
export function trajectoryStartOptions(
  taskQueue: string,
  trajectoryId: string,
  input: TrajectoryRequest,
  options: StartOptions = {},
): WorkflowStartOptions<typeof trajectoryWorkflow> {
  return {
    taskQueue,
    workflowId: trajectoryId,
    args: [input],
    staticSummary: options.summary ?? trajectorySummary(input),
    typedSearchAttributes: initialSearchAttributes(),
    // What notices a dead worker in the middle of a local-lane call (core/tools/lanes.ts).
    workflowTaskTimeout: options.workflowTaskTimeoutMs ?? LOCAL_LANE_TASK_TIMEOUT_MS,
  };
}

export class SettleClient {
  constructor(
    readonly client: Client,
    readonly taskQueue: string = DEFAULT_TASK_QUEUE,
  ) {}

  /**
   * Connects the standard way (client/connection.ts: envconfig profile and TEMPORAL_* environment,
   * including TLS and API keys); `overrides` win over both.
   */
  static async connect(overrides: TargetOverrides = {}): Promise<SettleClient> {
    const target = loadTemporalTarget(overrides);
    const connection = await Connection.connect(target.connectionOptions);
    return new SettleClient(new Client({ connection, namespace: target.namespace }), target.taskQueue);
  }

  /**
   * A client that connects at its first call, not now: for a process that must start while
   * Temporal is unreachable (the console shows PostgreSQL's records meanwhile). Each call fails
   * on its own until Temporal answers, at once: no gRPC retries (the caller asks again, e.g. at
   * the next page load), whose timers would also outlive the connection's close.
   */
  static lazy(overrides: TargetOverrides = {}): SettleClient {
    const target = loadTemporalTarget(overrides);
    const connection = Connection.lazy({ ...target.connectionOptions, interceptors: [] });
    return new SettleClient(new Client({ connection, namespace: target.namespace }), target.taskQueue);
  }

  async close(): Promise<void> {
    await this.client.connection.close();
  }

  /**
   * Starts a trajectory whose workflow id is the trajectory id (part of every key). The input is
   * checked against the input contract first: a broken one throws InputError naming the field,
   * and nothing starts.
   */
  async start(
    trajectoryId: string,
    input: TrajectoryRequest,
    options: StartOptions = {},
  ): Promise<WorkflowHandleWithFirstExecutionRunId<typeof trajectoryWorkflow>> {
    if (isReservedChildId(trajectoryId)) throw new InputError('trajectoryId', RESERVED_CHILD_ID_RULE);
    parseArgs((await inputSchemas()).TrajectoryRequestSchema(), input, 'input');
    return this.client.workflow.start<typeof trajectoryWorkflow>(
      'trajectoryWorkflow',
      trajectoryStartOptions(this.taskQueue, trajectoryId, input, options),
    );
  }

  /**
   * Runs one turn's calls and returns their observations. The update id is derived from
   * (trajectory, turn): an orchestrator that retries this after a crash gets the same result
   * and executes nothing twice.
   */
  async runTurn(trajectoryId: string, turn: number, calls: ProposedCall[]): Promise<RunTurnResult> {
    // The workflow's validator applies the same contract; checking here first gives a clear
    // error even for input too deep to serialise.
    parseArgs((await inputSchemas()).RunTurnInputSchema(), { turn, calls }, '');
    return this.handle(trajectoryId).executeUpdate(runTurnUpdate, {
      args: [{ turn, calls }],
      updateId: runTurnUpdateId(trajectoryId, turn),
    });
  }

  async finish(trajectoryId: string, outcome: FinishInput['outcome'], reason: string): Promise<void> {
    await this.handle(trajectoryId).executeUpdate(finishUpdate, { args: [{ outcome, reason }] });
  }

  /** The Temporal namespace this client works in: an operator credential binds it. */
  get namespace(): string {
    return this.client.options.namespace;
  }

  /** The A3 calls a trajectory waits to approve, with their full arguments, as its workflow describes them (needs a worker). */
  async pendingApprovals(trajectoryId: string): Promise<PendingApproval[]> {
    return this.handle(trajectoryId).query(pendingApprovalsQuery);
  }

  /**
   * The call a trajectory says waits for approval under `key`, tool and full arguments. Throws
   * InputError (field `key`) when none does, naming who decided it when it was decided already.
   */
  async waitingApproval(trajectoryId: string, key: string): Promise<PendingApproval> {
    await this.requireWorker(trajectoryId, 'say which calls wait for approval');
    const call = (await this.pendingApprovals(trajectoryId)).find((p) => p.key === key);
    if (call) return call;
    const decided = (await this.handle(trajectoryId).query(callsQuery)).find((c) => c.key === key && c.approval)?.approval;
    const short = `${key.slice(0, 16)}…`;
    throw new InputError(
      'key',
      !decided
        ? `name a call that trajectory ${trajectoryId} waits to approve (${short} is not one)`
        : decided.approver === APPROVAL_DEADLINE_APPROVER
          ? `name a call still waiting for approval: ${short} was denied when its approval deadline passed (${decided.reason}); the agent was told, and a new call must be made to try again`
          : `name a call still waiting for approval: ${short} was already ${decided.decision === 'approve' ? 'approved' : 'denied'} by ${decided.approver} (${decided.reason})`,
    );
  }

  /**
   * What a credential deciding `decision` must bind: the call the trajectory says waits under that
   * key — its tool and full arguments (core/approval-claim.ts). Throws InputError (field `key`)
   * when no call waits under it, or when the call described does not derive the key.
   */
  async approvalClaim(decision: Omit<ApprovalDecision, 'namespace'>): Promise<OperatorClaim> {
    return approvalClaim({ ...decision, namespace: this.namespace }, await this.waitingApproval(decision.trajectoryId, decision.key));
  }

  /**
   * Approves or denies an A3 call: the decision, approver and reason are the operator credential's
   * (minted with the operator's key: `settle approve`, or mintCredential). The worker refuses any
   * decision without one (docs/security.md#operator-authority).
   */
  async approve(trajectoryId: string, credential: OperatorCredential): Promise<void> {
    const { body } = credential;
    if (body.purpose !== 'approve') throw new InputError('credential', `be for an approval (it is for ${body.purpose})`);
    await this.handle(trajectoryId).executeUpdate(approveCallUpdate, {
      args: [{ key: body.key, approver: body.operator, decision: body.decision, reason: body.reason, credential }],
    });
  }

  /** An operator's verdict on an IN_DOUBT call the trajectory waits for, as its operator credential says (`settle resolve`). */
  async settle(trajectoryId: string, credential: OperatorCredential): Promise<{ state: string }> {
    return (await this.startSettle(trajectoryId, credential)).result();
  }

  /**
   * settle(), answered once the trajectory's worker accepted the verdict (its validator passed);
   * the handle's result() is the record's state. Waits as long as no worker runs the trajectory.
   */
  async startSettle(trajectoryId: string, credential: OperatorCredential): Promise<WorkflowUpdateHandle<{ state: string }>> {
    const { body } = credential;
    if (body.purpose !== 'settle') throw new InputError('credential', `be for a verdict (it is for ${body.purpose})`);
    const settlement: SettleCallInput = {
      key: body.key,
      verdict: body.verdict,
      operator: body.operator,
      reason: body.reason,
      generation: body.generation,
      credential,
    };
    return this.handle(trajectoryId).startUpdate(settleCallUpdate, { args: [settlement], waitForStage: WorkflowUpdateStage.ACCEPTED });
  }

  async result(trajectoryId: string): Promise<TrajectoryResult> {
    return this.handle(trajectoryId).result();
  }

  /** What `settle status` prints: Temporal's view, settle's search attributes, the calls so far (client/status/report.ts). */
  async status(trajectoryId: string, deadlineMs = STATUS_DEADLINE_MS): Promise<TrajectoryStatusReport> {
    return trajectoryStatusReport(this.statusReads(), trajectoryId, deadlineMs);
  }

  /** The keys of a trajectory's calls so far (asks the workflow: needs a worker). */
  async callKeys(trajectoryId: string): Promise<string[]> {
    const calls = await this.handle(trajectoryId).query(callsQuery);
    return calls.flatMap((c) => (c.key ? [c.key] : []));
  }

  /**
   * Throws NoWorkerError when no worker polls the running trajectory's task queue: what `action`
   * needs (a query, an update) would otherwise wait for one until its deadline.
   */
  async requireWorker(trajectoryId: string, action: string): Promise<void> {
    const description = await this.handle(trajectoryId).describe();
    if (description.status.name !== 'RUNNING') return;
    if (!(await this.workerPolling(description.taskQueue))) throw new NoWorkerError(description.taskQueue, trajectoryId, action);
  }

  /** Whether a worker polls `taskQueue` for workflow tasks now (one seen within a long poll's span). */
  async workerPolling(taskQueue: string): Promise<boolean> {
    return anyPollerLive(await this.statusReads().pollersLastSeen(taskQueue, STATUS_DEADLINE_MS));
  }

  /** Trajectories whose parent is `trajectoryId` (sub-agents), from visibility. */
  async subAgents(trajectoryId: string): Promise<SubAgentStatus[]> {
    return bySubAgentId(await this.statusReads().subAgents(trajectoryId, STATUS_DEADLINE_MS));
  }

  /** The status report's reads through Temporal's client. */
  private statusReads(): TrajectoryReads {
    const bounded = <T>(deadlineMs: number, fn: () => Promise<T>): Promise<T> =>
      this.client.connection.withDeadline(Date.now() + deadlineMs, fn);
    return {
      describe: async (trajectoryId, deadlineMs) => {
        const description = await bounded(deadlineMs, () => this.handle(trajectoryId).describe());
        const sa = description.typedSearchAttributes;
        return {
          runStatus: description.status.name,
          taskQueue: description.taskQueue,
          summary: (await description.staticSummary()) ?? null,
          status: sa.get(SA_TRAJECTORY_STATUS) ?? null,
          inDoubt: sa.get(SA_IN_DOUBT_COUNT) ?? 0,
          pendingApprovals: sa.get(SA_PENDING_APPROVALS) ?? 0,
        };
      },
      pollersLastSeen: async (taskQueue, deadlineMs) => {
        const response = await bounded(deadlineMs, () =>
          this.client.workflowService.describeTaskQueue({
            namespace: this.client.options.namespace,
            taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          }),
        );
        return (response.pollers ?? []).map((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000);
      },
      subAgents: (trajectoryId, deadlineMs) =>
        bounded(deadlineMs, async () => {
          const found: SubAgentStatus[] = [];
          for await (const w of this.client.workflow.list({ query: subAgentsQuery(trajectoryId) })) {
            found.push({
              trajectoryId: w.workflowId,
              runStatus: w.status.name,
              status: w.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) ?? null,
            });
            if (found.length >= 100) break;
          }
          return found;
        }),
      query: <T>(trajectoryId: string, queryName: string, deadlineMs: number) =>
        bounded(deadlineMs, () => this.handle(trajectoryId).query<T>(queryName)),
      result: (trajectoryId, deadlineMs) => bounded(deadlineMs, () => this.handle(trajectoryId).result()),
    };
  }

  handle(trajectoryId: string): WorkflowHandle<typeof trajectoryWorkflow> {
    return this.client.workflow.getHandle<typeof trajectoryWorkflow>(trajectoryId);
  }
}

/**
 * The input contract's zod schemas, loaded by the first call that checks input: `status` and the
 * CLI commands built on it never need zod (about a fifth of a second to load).
 */
function inputSchemas(): Promise<typeof import('../core/trajectory-input')> {
  return import('../core/trajectory-input');
}
