/**
 * The task queue a gateway's worker polls (docs/mcp.md#one-gateway-per-session): one per session,
 * so a call runs, and is probed, only by the gateway in front of the upstream it was made to. A
 * running session keeps the queue it started on (a gateway started again after a crash reaches
 * its own in-doubt calls there), is joined only in front of the same upstream, and a queue another
 * live worker polls is refused.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
// CommonJS package: its namespace comes through the default export under ESM.
import proto from '@temporalio/proto';
import { UsageError } from '../usage-error';

/** The session workflow's memo member naming the upstream it was started in front of (a hash of its command line). */
export const UPSTREAM_MEMO = 'settle.mcp.upstream';

/**
 * How long after its last poll a worker still counts as alive: a live worker's long poll lasts up
 * to a minute before it polls again, so its last access is never older than that.
 */
export const LIVE_POLLER_MS = 90_000;

/** The default queue: the server's name, for the operator's eye, and the session's own part. */
export function defaultTaskQueue(server: string, trajectoryId: string): string {
  return `settle-mcp-${server}-${sha256(trajectoryId).slice(0, 16)}`;
}

/** What names the upstream instance: a hash of its command line (it may carry secrets; the memo must not). */
export function upstreamIdentity(words: readonly string[]): string {
  return sha256(JSON.stringify(words)).slice(0, 32);
}

/** The worker identity the gateway polls with: what `deadLocalWorker` reads back. */
export function gatewayWorkerIdentity(): string {
  return `${process.pid}@${os.hostname()}`;
}

export interface SessionQueueRequest {
  trajectoryId: string;
  server: string;
  /** upstreamIdentity() of this gateway's upstream. */
  upstream: string;
  /** `--task-queue`, if given. */
  requested: string | undefined;
}

/**
 * The session's queue: a running session's own (refused when `--task-queue` names another, or
 * when it runs in front of another upstream), else `--task-queue` or the default. Then refuses it
 * if another live worker polls it.
 */
export async function sessionTaskQueue(client: Client, request: SessionQueueRequest): Promise<string> {
  const { trajectoryId } = request;
  const running = await runningSession(client, trajectoryId);
  if (running && running.upstream !== undefined && running.upstream !== request.upstream) {
    throw new UsageError(
      `--trajectory: session ${trajectoryId} runs in front of another upstream (command line ${running.upstream.slice(0, 12)}…, ` +
        `this one ${request.upstream.slice(0, 12)}…): start it with the same --upstream, or give another --trajectory`,
    );
  }
  if (running && request.requested !== undefined && request.requested !== running.taskQueue) {
    throw new UsageError(`--task-queue: session ${trajectoryId} runs on ${running.taskQueue}: give that queue, or none`);
  }
  const queue = running?.taskQueue ?? request.requested ?? defaultTaskQueue(request.server, trajectoryId);
  const other = await liveWorkerOn(client, queue);
  if (other) {
    throw new UsageError(
      `task queue ${queue}: must have no other worker (${other.identity} polled it ${Math.round(other.ageMs / 1000)} s ago): ` +
        `another gateway serves session ${trajectoryId} there; stop it, or start this one with another --trajectory`,
    );
  }
  return queue;
}

/** Checks, once the session's workflow is started or joined, that it runs on the gateway's queue (another gateway may have started it meanwhile). */
export async function assertSessionOn(client: Client, trajectoryId: string, queue: string): Promise<void> {
  const running = await runningSession(client, trajectoryId);
  if (running && running.taskQueue !== queue) {
    throw new UsageError(
      `--trajectory: session ${trajectoryId} was started meanwhile on ${running.taskQueue}, not ${queue}; start the gateway again`,
    );
  }
}

async function runningSession(client: Client, trajectoryId: string): Promise<{ taskQueue: string; upstream?: string } | null> {
  try {
    const description = await client.workflow.getHandle(trajectoryId).describe();
    if (description.status.name !== 'RUNNING') return null;
    const upstream = description.memo?.[UPSTREAM_MEMO];
    return { taskQueue: description.taskQueue, ...(typeof upstream === 'string' ? { upstream } : {}) };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
}

/** A worker that polled the queue recently and is not a dead process of this host, or null. */
export async function liveWorkerOn(client: Client, queue: string, nowMs = Date.now()): Promise<{ identity: string; ageMs: number } | null> {
  const { TaskQueueType, TaskQueueKind } = proto.temporal.api.enums.v1;
  for (const type of [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY]) {
    const response = await client.workflowService.describeTaskQueue({
      namespace: client.options.namespace,
      taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: type,
    });
    for (const poller of response.pollers ?? []) {
      const ageMs = nowMs - Number(poller.lastAccessTime?.seconds ?? 0) * 1000;
      const identity = poller.identity ?? '';
      if (ageMs <= LIVE_POLLER_MS && !deadLocalWorker(identity)) return { identity, ageMs: Math.max(0, ageMs) };
    }
  }
  return null;
}

/**
 * A worker identity `<pid>@<this host>` whose process is gone: Temporal lists a SIGKILLed
 * worker's pollers for a while, and a gateway started again right after must not wait for that.
 * Any other identity (another host, another naming) counts as alive: fail closed.
 */
function deadLocalWorker(identity: string): boolean {
  const match = /^([0-9]+)@(.+)$/.exec(identity);
  if (!match || match[2] !== os.hostname()) return false;
  try {
    process.kill(Number(match[1]), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function sha256(text: string): string {
  return crypto.createHash('sha256').update(text).digest('hex');
}
