/**
 * The console's inbox: every call that needs a person, across all trajectories. IN_DOUBT and
 * IN_FLIGHT-past-its-lease records come from the endpoint store; calls waiting for approval from
 * Temporal visibility (SettlePendingApprovals > 0) and each such trajectory's `calls` and
 * `pendingApprovals` queries (an A3 call waits before its claim, so it has no record yet; the
 * query gives its whole arguments). Probe rounds and what the trajectory waits for come from the
 * same queries, each bounded by a deadline.
 */
import { trajectoryStateLabel } from '../../core/trajectory-state-label';
import type { EndpointRecord, EndpointStore } from '../../activities/store/endpoint-store';
import type { SettleClient } from '../../client/index';
import { describeArgs } from '../../core/calls';
import { callsQuery, pendingApprovalsQuery, waitingForQuery, type CallReport, type PendingApproval } from '../../workflows/definitions';
import { approvalArgsText } from '../approval-args';
import { SA_PENDING_APPROVALS, SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';

export type InboxKind = 'in_doubt' | 'lapsed_lease' | 'approval';

export interface InboxItem {
  kind: InboxKind;
  key: string;
  trajectoryId: string;
  /** Null on a row whose trajectory could not say which call waits (`unreadable`). */
  turn: number | null;
  callId: string | null;
  tool: string | null;
  /**
   * What the call acts on, from its recorded intent (path and hashes, command, hosts), else its
   * arguments. For a call waiting for approval: its whole arguments as escaped JSON.
   */
  target: string;
  /** A call waiting for approval whose worker did not give its whole arguments: `target` is the shortened summary. */
  targetShortened?: boolean;
  /** The record's generation (null: no record yet, as for a call waiting for approval). */
  generation: number | null;
  /** When the call began to need a person (epoch ms): the record's last change, the lease's end, the wait's start. */
  sinceMs: number;
  probes: number | null;
  /** Why the record is in doubt, and what the trajectory says it waits for (the probe's last answer). */
  saw: string | null;
  /** The trajectory's settle status (search attribute), e.g. waiting_operator. */
  trajectoryStatus: string | null;
  /** Why the row's call cannot be read (no worker polls its queue, no answer in time): it has no key and no action. */
  unreadable?: string;
}

/** What one trajectory answers: its calls and what it waits for (null when it cannot answer in time). */
interface TrajectoryView {
  calls: CallReport[] | null;
  waitingFor: string | null;
  status: string | null;
  /** The calls waiting for approval with their arguments (null: not asked, or a worker without the query). */
  approvals: PendingApproval[] | null;
}

const QUERY_DEADLINE_MS = 3_000;
const MAX_TRAJECTORIES = 200;

/** What the console could read, and what it could not (one line each, shown above the table). */
export interface Inbox {
  items: InboxItem[];
  missing: string[];
}

export async function collectInbox(client: SettleClient, store: EndpointStore, nowMs = Date.now()): Promise<Inbox> {
  const missing: string[] = [];
  // Each source on its own: PostgreSQL down still shows the approvals, Temporal down still shows the records.
  const [records, approvals] = await Promise.all([
    Promise.all([store.list({ state: 'IN_DOUBT', limit: 1000 }), store.list({ state: 'IN_FLIGHT', limit: 1000 })]).catch((err: unknown) => {
      missing.push(`PostgreSQL is unreachable (${firstLine(err)}): IN_DOUBT and lapsed-lease records are not shown`);
      return null;
    }),
    withDeadline(pendingApprovalTrajectories(client), READ_DEADLINE_MS, 'no answer within 3 s').catch((err: unknown) => {
      missing.push(
        `Temporal is unreachable (${firstLine(err)}): calls waiting for approval, probe rounds and trajectory states are not shown; the records below come from PostgreSQL`,
      );
      return null;
    }),
  ]);
  const [inDoubt, inFlight] = records ?? [[], []];
  const lapsed = inFlight.filter((r) => r.leaseUntil !== null && r.leaseUntil.getTime() < nowMs);
  const ids = new Set([...inDoubt, ...lapsed].map((r) => r.trajectoryId).concat((approvals ?? []).map((a) => a.trajectoryId)));
  const views = new Map<string, TrajectoryView>();
  // Temporal down: no trajectory can answer, and asking each would only wait out its deadline.
  if (approvals) {
    await Promise.all(
      [...ids].slice(0, MAX_TRAJECTORIES).map(async (id) => {
        const approval = approvals.find((a) => a.trajectoryId === id);
        views.set(id, await viewOf(client, id, approval?.status, approval !== undefined));
      }),
    );
  }
  const items: InboxItem[] = [
    ...inDoubt.map((r) => fromRecord(r, 'in_doubt', r.updatedAt.getTime(), views.get(r.trajectoryId))),
    ...lapsed.map((r) => fromRecord(r, 'lapsed_lease', r.leaseUntil!.getTime(), views.get(r.trajectoryId))),
  ];
  const polled = new Map<string, Promise<boolean | null>>();
  const workerPolls = (taskQueue: string) =>
    polled.get(taskQueue) ??
    polled
      .set(
        taskQueue,
        client.workerPolling(taskQueue).catch(() => null),
      )
      .get(taskQueue)!;
  for (const { trajectoryId, startMs, taskQueue } of approvals ?? []) {
    const view = views.get(trajectoryId);
    if (!view?.calls) {
      // It waits for approval (visibility says so) but cannot say for which call: keep its row, saying why.
      const polls = await workerPolls(taskQueue);
      items.push({
        kind: 'approval',
        key: '',
        trajectoryId,
        turn: null,
        callId: null,
        tool: null,
        target: '',
        generation: null,
        sinceMs: startMs,
        probes: null,
        saw: null,
        trajectoryStatus: view?.status ?? null,
        unreadable:
          polls === false
            ? `no worker polls ${taskQueue}: its calls and their arguments cannot be read, nor approved, until one does (npm run worker, or settle dev)`
            : `the trajectory did not answer within ${QUERY_DEADLINE_MS / 1000} s: its calls cannot be read now; refresh`,
      });
      continue;
    }
    for (const call of view.calls) {
      if (call.resolution !== 'awaiting_approval' || !call.key) continue;
      const wait = view.waitingFor ? parseWait(view.waitingFor, call.key) : null;
      const pending = view.approvals?.find((a) => a.key === call.key);
      items.push({
        kind: 'approval',
        key: call.key,
        trajectoryId,
        turn: call.turn,
        callId: call.callId,
        tool: call.tool,
        ...(pending ? { target: approvalArgsText(pending.args) } : { target: wait?.target ?? '', targetShortened: true }),
        generation: null,
        sinceMs: wait?.sinceMs ?? startMs,
        probes: null,
        saw: null,
        trajectoryStatus: view.status ?? null,
      });
    }
  }
  return { items, missing };
}

/** How long the console waits for Temporal's visibility before it shows what PostgreSQL has. */
const READ_DEADLINE_MS = 3_000;

function withDeadline<T>(work: Promise<T>, ms: number, why: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(why)), ms)));
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

function firstLine(err: unknown): string {
  let e: unknown = err;
  // The innermost cause names what failed (ECONNREFUSED, a gRPC status), not the wrapper's "failed to list".
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!;
}

interface ApprovalTrajectory {
  trajectoryId: string;
  startMs: number;
  status: string | null;
  taskQueue: string;
}

async function pendingApprovalTrajectories(client: SettleClient): Promise<ApprovalTrajectory[]> {
  const found: ApprovalTrajectory[] = [];
  const query = `${SA_PENDING_APPROVALS.name} > 0 AND ExecutionStatus = "Running"`;
  for await (const w of client.client.workflow.list({ query })) {
    found.push({
      trajectoryId: w.workflowId,
      startMs: w.startTime.getTime(),
      status: w.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) ?? null,
      taskQueue: w.taskQueue,
    });
    if (found.length >= MAX_TRAJECTORIES) break;
  }
  return found;
}

/** The trajectory's calls and current wait, if it answers within the deadline (a closed or workerless one may not). */
async function viewOf(
  client: SettleClient,
  trajectoryId: string,
  knownStatus: string | null | undefined,
  waitsForApproval: boolean,
): Promise<TrajectoryView> {
  const handle = client.handle(trajectoryId);
  const unanswered = (): TrajectoryView => ({ calls: null, waitingFor: null, status: knownStatus ?? null, approvals: null });
  const answer = async (): Promise<TrajectoryView> => {
    const description = await handle.describe();
    const status = knownStatus ?? description.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) ?? null;
    // Ended from outside (terminated, timed out): the settle status it last wrote, read as what it was doing when it ended.
    if (description.status.name !== 'RUNNING') {
      return { calls: null, waitingFor: null, status: trajectoryStateLabel(description.status.name, status), approvals: null };
    }
    const [calls, waitingFor, approvals] = await Promise.all([
      handle.query(callsQuery),
      handle.query(waitingForQuery),
      // A worker from before the query does not know it: its rows keep the shortened summary, marked so.
      waitsForApproval ? handle.query(pendingApprovalsQuery).catch(() => null) : null,
    ]);
    return { calls, waitingFor, status, approvals };
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<TrajectoryView>((resolve) => {
    timer = setTimeout(() => resolve(unanswered()), QUERY_DEADLINE_MS);
  });
  try {
    return await Promise.race([answer().catch(unanswered), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function fromRecord(r: EndpointRecord, kind: InboxKind, sinceMs: number, view: TrajectoryView | undefined): InboxItem {
  const call = view?.calls?.find((c) => c.key === r.key);
  const waiting = view?.waitingFor && view.waitingFor.includes(r.key.slice(0, 16)) ? explanationOf(view.waitingFor) : null;
  return {
    kind,
    key: r.key,
    trajectoryId: r.trajectoryId,
    turn: r.turn,
    callId: r.callId,
    tool: r.tool,
    target: targetOf(r.intent, r.args),
    generation: r.generation,
    sinceMs,
    probes: call?.probes ?? null,
    saw: [r.detail, waiting].filter((t): t is string => !!t).join(' · ') || null,
    trajectoryStatus: view?.status ?? null,
  };
}

/** The recorded intent, read as an operator needs it: the file and its hashes, the command and hosts. */
export function targetOf(intent: unknown, args: unknown): string {
  const i = (intent && typeof intent === 'object' ? intent : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  if (text(i.path)) {
    const hashes = [
      text(i.sha256_before) && `before ${text(i.sha256_before)!.slice(0, 12)}`,
      text(i.sha256_after) && `after ${text(i.sha256_after)!.slice(0, 12)}`,
    ];
    return [`path ${text(i.path)}`, hashes.filter(Boolean).length ? `sha256 ${hashes.filter(Boolean).join(', ')}` : null]
      .filter(Boolean)
      .join(' · ');
  }
  if (text(i.command)) {
    const hosts = Array.isArray(i.egress) ? i.egress.filter((h): h is string => typeof h === 'string') : [];
    return [`command ${text(i.command)}`, text(i.cwd) && `in ${text(i.cwd)}`, hosts.length ? `hosts ${hosts.join(', ')}` : null]
      .filter(Boolean)
      .join(' · ');
  }
  return args && typeof args === 'object' ? describeArgs(args as Record<string, unknown>) : '';
}

/** The wait's target and start, from the first line of the trajectory's current details (core/operator-details.ts). */
function parseWait(details: string, key: string): { target: string; sinceMs: number | null } | null {
  const first = details.split('\n')[0] ?? '';
  if (!first.includes(key.slice(0, 16))) return null;
  const parts = first.split(' · ');
  // "`tool` `target`": the target is what follows the tool's code span.
  const target = (parts[1] ?? '')
    .replace(/^`[^`]*`\s*/, '')
    .replace(/`/g, '')
    .trim();
  const since = /since (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC/.exec(first)?.[1];
  return { target, sinceMs: since ? Date.parse(`${since.replace(' ', 'T')}Z`) : null };
}

/** The last paragraph of the current details: why it waits, with the probe's last answer. */
function explanationOf(details: string): string {
  const paragraphs = details.split('\n\n');
  // Its last sentence points at the commands shown with it, which the console replaces with buttons.
  return (paragraphs[paragraphs.length - 1] ?? '')
    .replace(/`/g, '')
    .replace(/\s*Check whether it did, then settle it with one of the commands above\.$/, '')
    .trim();
}
