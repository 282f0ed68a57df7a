/**
 * The gateway's handle on its session's workflow (workflows/mcp-session.ts), one per trajectory
 * id. A run ends when a gateway closes the session; a gateway started again on the trajectory, or
 * one still serving it beside the one that closed, then needs a new run under the same id. Call
 * keys derive from the trajectory id, never the run, so in a new run a completed call replays
 * from its endpoint record and an unfinished one is taken over as any settled call is.
 */
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { SettledResult } from '../../workflows/team-calls';
import { mcpCallUpdate, mcpCloseSignal, mcpOpenSignal, type McpCallInput } from '../../workflows/mcp-definitions';
import type { mcpSessionWorkflow } from '../../workflows/mcp-session';
import { LOCAL_LANE_TASK_TIMEOUT_MS } from '../../core/tools/lanes';

/** A call still waiting (an A3 approval) keeps the run open: the gateway stops anyway after this. */
const CLOSE_WAIT_MS = 5_000;

export interface SessionOptions {
  trajectoryId: string;
  taskQueue: string;
  /** The upstream's name in the operator's registry. */
  server: string;
  /** Set on a run this gateway starts (the upstream it serves: a gateway for another one is refused). */
  memo?: Record<string, unknown>;
}

export class SessionWorkflow {
  private constructor(
    private readonly client: Client,
    private readonly options: SessionOptions,
    /** Without a run id: it names the trajectory's newest run, whichever that is. */
    private readonly handle: WorkflowHandle<typeof mcpSessionWorkflow>,
  ) {}

  static async open(client: Client, options: SessionOptions): Promise<SessionWorkflow> {
    return new SessionWorkflow(client, options, await start(client, options));
  }

  /**
   * One settled call as the update `updateId` (the call's key). When the run it reached has
   * completed or is closing, the update never ran there: a new run (or the running one, reopened)
   * takes it, once.
   */
  async call(input: McpCallInput, updateId: string): Promise<SettledResult<unknown>> {
    try {
      return await this.handle.executeUpdate(mcpCallUpdate, { args: [input], updateId });
    } catch (err) {
      // The server's NOT_FOUND: "workflow execution already completed", "aborted by closing workflow".
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      await start(this.client, this.options);
      return await this.handle.executeUpdate(mcpCallUpdate, { args: [input], updateId });
    }
  }

  /**
   * The session ended for this gateway: the run completes once its calls have. Waits for that (at
   * most `waitMs`) while this gateway's worker still runs, so a run whose calls are done ends now,
   * not when the next gateway on the trajectory brings its worker.
   */
  async close(waitMs = CLOSE_WAIT_MS): Promise<void> {
    await this.handle.signal(mcpCloseSignal);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([this.handle.result().catch(() => {}), waited]);
    clearTimeout(timer);
  }
}

/**
 * Joins the trajectory's running session (its open signal cancels a close still pending there),
 * or starts a new run under the same id when none runs: one atomic signal-with-start.
 */
function start(client: Client, options: SessionOptions): Promise<WorkflowHandle<typeof mcpSessionWorkflow>> {
  return client.workflow.signalWithStart<typeof mcpSessionWorkflow, []>('mcpSessionWorkflow', {
    workflowId: options.trajectoryId,
    taskQueue: options.taskQueue,
    args: [{ server: options.server }],
    signal: mcpOpenSignal,
    signalArgs: [],
    ...(options.memo ? { memo: options.memo } : {}),
    // What notices a dead gateway worker in the middle of a local-lane call (core/tools/lanes.ts).
    workflowTaskTimeout: LOCAL_LANE_TASK_TIMEOUT_MS,
  });
}
