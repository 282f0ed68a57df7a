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
} from '@temporalio/client';
import {
  approveCallUpdate,
  callsQuery,
  finishUpdate,
  runTurnUpdate,
  runTurnUpdateId,
  settleCallUpdate,
  waitingForQuery,
  type CallReport,
  type FinishInput,
  type ProposedCall,
  type RunTurnResult,
  type SettleCallInput,
  type TrajectoryResult,
} from '../workflows/definitions';
import type { trajectoryWorkflow } from '../workflows/trajectory';
import {
  initialSearchAttributes,
  SA_IN_DOUBT_COUNT,
  SA_PARENT_TRAJECTORY,
  SA_PENDING_APPROVALS,
  SA_TRAJECTORY_STATUS,
} from '../workflows/search-attributes';
// CommonJS package: its namespace comes through the default export under ESM.
import proto from '@temporalio/proto';
const { temporal } = proto;
import type { TrajectoryRequest } from '../core/trajectory-input';
import { parseArgs } from '../core/validation';
import { InputError } from '../core/errors';
import type { OperatorCredential } from '../core/operator-credential';
import { isReservedChildId, RESERVED_CHILD_ID_RULE } from '../core/trajectory-ids';
import { LOCAL_LANE_TASK_TIMEOUT_MS } from '../core/tools/lanes';

export { DEFAULT_TASK_QUEUE } from './connection';

/** A long poll lasts up to about a minute; a poller not seen for longer is gone. */
const POLLER_LIVENESS_MS = 90_000;

/**
 * How long `status` waits for any one answer. The server keeps a dead worker's poller listed for
 * about two minutes, and a query routed to it waits out the server's own timeout: the CLI says
 * so after this long instead of printing an empty table.
 */
export const STATUS_DEADLINE_MS = 5_000;

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

export interface TrajectoryStatusReport {
  trajectoryId: string;
  /** Temporal's view: RUNNING, COMPLETED, FAILED, CANCELLED, … */
  runStatus: string;
  /** The workflow's static summary (set at start). */
  summary: string | null;
  /** The task queue the trajectory runs on, and whether any worker polls it now. */
  taskQueue: string;
  workerPolling: boolean;
  /** Sub-agents started by this trajectory (search attribute SettleParentTrajectory). */
  subAgents: { trajectoryId: string; runStatus: string; status: string | null }[];
  /** settle's view (search attribute SettleTrajectoryStatus). */
  status: string | null;
  inDoubt: number;
  pendingApprovals: number;
  waitingFor: string | null;
  calls: CallReport[];
  /** Why the trajectory's own answer (calls, waitingFor) is missing, in one line; null when it answered or was not asked. */
  unanswered: string | null;
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
    return this.handle(trajectoryId).executeUpdate(settleCallUpdate, { args: [settlement] });
  }

  async result(trajectoryId: string): Promise<TrajectoryResult> {
    return this.handle(trajectoryId).result();
  }

  async status(trajectoryId: string, deadlineMs = STATUS_DEADLINE_MS): Promise<TrajectoryStatusReport> {
    const bounded = <T>(fn: () => Promise<T>): Promise<T> => this.client.connection.withDeadline(Date.now() + deadlineMs, fn);
    const handle = this.handle(trajectoryId);
    // The sub-agents need nothing from the description: asked at the same time, one round trip less.
    const subAgentsAsked = bounded(() => this.subAgents(trajectoryId));
    subAgentsAsked.catch(() => {}); // awaited below, unless describing failed first
    const description = await bounded(() => handle.describe());
    const sa = description.typedSearchAttributes;
    const taskQueue = description.taskQueue;
    let calls: CallReport[] = [];
    let waitingFor: string | null = null;
    let unanswered: string | null = null;
    // A query needs a worker: with none polling, it would hang until its deadline and answer
    // nothing. Ask the task queue first; the CLI then shows the endpoint records instead.
    const [workerPolling, subAgents] = await Promise.all([bounded(() => this.workerPolling(taskQueue)), subAgentsAsked]);
    try {
      if (description.status.name === 'COMPLETED') {
        // A closed trajectory answers from its result: no worker needed.
        calls = (await bounded(() => handle.result())).calls;
      } else if (workerPolling) {
        calls = await bounded(() => handle.query(callsQuery));
        waitingFor = await bounded(() => handle.query(waitingForQuery));
      }
    } catch (err) {
      unanswered = unansweredReason(err, deadlineMs, description.status.name);
    }
    const summary = (await description.staticSummary()) ?? null;
    return {
      trajectoryId,
      runStatus: description.status.name,
      summary,
      taskQueue,
      workerPolling,
      subAgents,
      status: sa.get(SA_TRAJECTORY_STATUS) ?? null,
      inDoubt: sa.get(SA_IN_DOUBT_COUNT) ?? 0,
      pendingApprovals: sa.get(SA_PENDING_APPROVALS) ?? 0,
      waitingFor,
      calls,
      unanswered,
    };
  }

  /** The keys of a trajectory's calls so far (asks the workflow: needs a worker). */
  async callKeys(trajectoryId: string): Promise<string[]> {
    const calls = await this.handle(trajectoryId).query(callsQuery);
    return calls.flatMap((c) => (c.key ? [c.key] : []));
  }

  /**
   * Whether a worker polls `taskQueue` for workflow tasks now. The server lists a poller for
   * minutes after it was last seen, so only one seen within a long poll's span counts.
   */
  async workerPolling(taskQueue: string): Promise<boolean> {
    const response = await this.client.workflowService.describeTaskQueue({
      namespace: this.client.options.namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    const now = Date.now();
    return (response.pollers ?? []).some((p) => {
      const seconds = Number(p.lastAccessTime?.seconds ?? 0);
      return now - seconds * 1000 < POLLER_LIVENESS_MS;
    });
  }

  /** Trajectories whose parent is `trajectoryId` (sub-agents), from visibility. */
  async subAgents(trajectoryId: string): Promise<TrajectoryStatusReport['subAgents']> {
    const found: TrajectoryStatusReport['subAgents'] = [];
    const query = `${SA_PARENT_TRAJECTORY.name} = ${JSON.stringify(trajectoryId)}`;
    for await (const w of this.client.workflow.list({ query })) {
      found.push({
        trajectoryId: w.workflowId,
        runStatus: w.status.name,
        status: w.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) ?? null,
      });
      if (found.length >= 100) break;
    }
    return found.sort((a, b) => a.trajectoryId.localeCompare(b.trajectoryId));
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

/**
 * gRPC's DEADLINE_EXCEEDED, on the error or a cause of it (the SDK wraps it: "Failed to query
 * workflow"). CANCELLED counts too: when the deadline passes while the server still waits for a
 * worker to answer a query, the call ends as "1 CANCELLED: Call cancelled" rather than code 4.
 */
export function deadlineExceeded(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (code === 4 || code === 1) return true;
  }
  return false;
}

/** One line: why a trajectory did not answer `status` (deadline, or the server's reason). */
function unansweredReason(err: unknown, deadlineMs: number, runStatus: string): string {
  if (deadlineExceeded(err)) {
    return runStatus === 'RUNNING'
      ? `the trajectory did not answer within ${deadlineMs / 1000} s: its worker is probably gone (the server lists a dead worker's poller for about two minutes)`
      : `Temporal did not return the ${runStatus} trajectory's result within ${deadlineMs / 1000} s`;
  }
  let reason = (err as Error).message ?? String(err);
  for (let e = (err as { cause?: unknown }).cause; e instanceof Error; e = (e as { cause?: unknown }).cause) reason = e.message;
  return `the trajectory did not answer: ${reason.split('\n')[0]}`;
}
