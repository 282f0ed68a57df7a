/**
 * How many running trajectories wait for a person, and since when the oldest waits: for an
 * approval (SettlePendingApprovals > 0) and for an operator's verdict (SettleTrajectoryStatus =
 * "waiting_operator"). Visibility finds them; each one's `waitingFor` query says since when it
 * waits (the summary line core/operator-details.ts writes). A trajectory that does not answer in
 * time counts from its start: an age too old rather than too young, so an alert errs on the side
 * of looking.
 */
import type { Client } from '@temporalio/client';
import { parseWaitSummary } from '../core/operator-details';
import { waitingForQuery } from '../workflows/definitions';
import { SA_PENDING_APPROVALS, SA_TRAJECTORY_STATUS } from '../workflows/search-attributes';

export interface Waits {
  trajectories: number;
  /** Seconds since the oldest wait began (0: none waits). */
  oldestAgeSeconds: number;
}

/** Trajectories looked at per kind of wait; the count is visibility's, whatever this bound. */
const MAX_TRAJECTORIES = 100;
const QUERY_DEADLINE_MS = 3_000;

export const WAIT_KINDS = {
  approval: { query: `${SA_PENDING_APPROVALS.name} > 0 AND ExecutionStatus = "Running"`, headline: 'waiting for approval' },
  operator: {
    query: `${SA_TRAJECTORY_STATUS.name} = "waiting_operator" AND ExecutionStatus = "Running"`,
    headline: 'waiting for an operator',
  },
} as const;

export async function oldestWaits(client: Client, kind: keyof typeof WAIT_KINDS, nowMs = Date.now()): Promise<Waits> {
  const { query, headline } = WAIT_KINDS[kind];
  const [{ count }, starts] = await Promise.all([client.workflow.count(query), listStarts(client, query)]);
  const since = await Promise.all(
    starts.map(async ({ workflowId, startMs }) => {
      const details = await withDeadline(client.workflow.getHandle(workflowId).query(waitingForQuery));
      const wait = details === null ? null : parseWaitSummary(details);
      return wait && wait.headline === headline ? wait.sinceMs : startMs;
    }),
  );
  const oldest = Math.min(nowMs, ...since);
  return { trajectories: count, oldestAgeSeconds: Math.max(0, (nowMs - oldest) / 1000) };
}

async function listStarts(client: Client, query: string): Promise<{ workflowId: string; startMs: number }[]> {
  const found: { workflowId: string; startMs: number }[] = [];
  for await (const w of client.workflow.list({ query, pageSize: MAX_TRAJECTORIES })) {
    found.push({ workflowId: w.workflowId, startMs: w.startTime.getTime() });
    if (found.length >= MAX_TRAJECTORIES) break;
  }
  return found;
}

async function withDeadline<T>(p: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), QUERY_DEADLINE_MS)));
  try {
    return await Promise.race([p.catch(() => null), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
