/**
 * A trajectory's status report, assembled from five reads of Temporal (describe, the task queue's
 * pollers, the sub-agents, two queries or the result). The reads come from either Temporal's
 * client (`SettleClient.status`) or the CLI's lean gRPC reader (client/status/grpc-reads.ts),
 * which starts in a third of the time: both answer through this one assembly.
 */
import { SEARCH_ATTRIBUTES } from '../../core/search-attributes';
import {
  callsQuery,
  pendingApprovalsQuery,
  waitingForQuery,
  type CallReport,
  type PendingApproval,
  type TrajectoryResult,
} from '../../workflows/definitions';

/**
 * How long `status` waits for any one answer. The server keeps a dead worker's poller listed for
 * about two minutes, and a query routed to it waits out the server's own timeout: the CLI says
 * so after this long instead of printing an empty table.
 */
export const STATUS_DEADLINE_MS = 5_000;

/** A long poll lasts up to about a minute; a poller not seen for longer is gone. */
const POLLER_LIVENESS_MS = 90_000;

/** The search attributes the report reads, by their registered names. */
export const STATUS_SEARCH_ATTRIBUTES = {
  status: 'SettleTrajectoryStatus',
  inDoubt: 'SettleInDoubtCount',
  pendingApprovals: 'SettlePendingApprovals',
  parent: 'SettleParentTrajectory',
} as const satisfies Record<string, keyof typeof SEARCH_ATTRIBUTES>;

export interface SubAgentStatus {
  trajectoryId: string;
  runStatus: string;
  status: string | null;
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
  subAgents: SubAgentStatus[];
  /** settle's view (search attribute SettleTrajectoryStatus). */
  status: string | null;
  inDoubt: number;
  pendingApprovals: number;
  waitingFor: string | null;
  calls: CallReport[];
  /**
   * The calls waiting for approval, with their whole arguments: [] when none waits; null when some
   * wait but the trajectory did not say which (no worker, or one from before the query).
   */
  approvals: PendingApproval[] | null;
  /** Why the trajectory's own answer (calls, waitingFor) is missing, in one line; null when it answered or was not asked. */
  unanswered: string | null;
}

/** What describing the workflow tells: Temporal's run status and settle's search attributes. */
export interface TrajectoryDescription {
  runStatus: string;
  taskQueue: string;
  summary: string | null;
  status: string | null;
  inDoubt: number;
  pendingApprovals: number;
}

/** The reads a status report needs; each is bounded by `deadlineMs` from when it starts. */
export interface TrajectoryReads {
  describe(trajectoryId: string, deadlineMs: number): Promise<TrajectoryDescription>;
  /** When each poller of the task queue's workflow tasks was last seen (epoch ms). */
  pollersLastSeen(taskQueue: string, deadlineMs: number): Promise<number[]>;
  /** Up to 100 trajectories whose SettleParentTrajectory is `trajectoryId`. */
  subAgents(trajectoryId: string, deadlineMs: number): Promise<SubAgentStatus[]>;
  query<T>(trajectoryId: string, queryName: string, deadlineMs: number): Promise<T>;
  /** The result of a COMPLETED run. */
  result(trajectoryId: string, deadlineMs: number): Promise<TrajectoryResult>;
}

/** The visibility query that finds a trajectory's sub-agents. */
export function subAgentsQuery(trajectoryId: string): string {
  return `${STATUS_SEARCH_ATTRIBUTES.parent} = ${JSON.stringify(trajectoryId)}`;
}

/** Sub-agents in the order the report lists them: by trajectory id. */
export function bySubAgentId(subAgents: SubAgentStatus[]): SubAgentStatus[] {
  return [...subAgents].sort((a, b) => a.trajectoryId.localeCompare(b.trajectoryId));
}

/** The server lists a poller for minutes after it was last seen: only one seen within a long poll's span counts. */
export function anyPollerLive(lastSeen: number[], now = Date.now()): boolean {
  return lastSeen.some((t) => now - t < POLLER_LIVENESS_MS);
}

export async function trajectoryStatusReport(
  reads: TrajectoryReads,
  trajectoryId: string,
  deadlineMs = STATUS_DEADLINE_MS,
): Promise<TrajectoryStatusReport> {
  // The sub-agents need nothing from the description: asked at the same time, one round trip less.
  const subAgentsAsked = reads.subAgents(trajectoryId, deadlineMs);
  subAgentsAsked.catch(() => {}); // awaited below, unless describing failed first
  const description = await reads.describe(trajectoryId, deadlineMs);
  // A query needs a worker: with none polling, it would hang until its deadline and answer
  // nothing. Ask the task queue first; the CLI then shows the endpoint records instead.
  const [lastSeen, subAgents] = await Promise.all([reads.pollersLastSeen(description.taskQueue, deadlineMs), subAgentsAsked]);
  const workerPolling = anyPollerLive(lastSeen);
  let calls: CallReport[] = [];
  let waitingFor: string | null = null;
  let approvals: PendingApproval[] | null = description.pendingApprovals > 0 ? null : [];
  let unanswered: string | null = null;
  try {
    if (description.runStatus === 'COMPLETED') {
      // A closed trajectory answers from its result: no worker needed.
      calls = (await reads.result(trajectoryId, deadlineMs)).calls;
    } else if (workerPolling) {
      calls = await reads.query<CallReport[]>(trajectoryId, callsQuery.name, deadlineMs);
      waitingFor = await reads.query<string | null>(trajectoryId, waitingForQuery.name, deadlineMs);
      // Asked only when something waits: a worker from before the query answers nothing, not an error.
      if (approvals === null) {
        approvals = await reads.query<PendingApproval[]>(trajectoryId, pendingApprovalsQuery.name, deadlineMs).catch(() => null);
      }
    }
  } catch (err) {
    unanswered = unansweredReason(err, deadlineMs, description.runStatus);
  }
  return {
    trajectoryId,
    runStatus: description.runStatus,
    summary: description.summary,
    taskQueue: description.taskQueue,
    workerPolling,
    subAgents: bySubAgentId(subAgents),
    status: description.status,
    inDoubt: description.inDoubt,
    pendingApprovals: description.pendingApprovals,
    waitingFor,
    calls,
    approvals,
    unanswered,
  };
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
