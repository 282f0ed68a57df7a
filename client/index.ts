/**
 * The orchestrator's side: a typed client for trajectories. Wraps Temporal's client so an
 * orchestrator never handles update names, ids or payload shapes by hand.
 *
 *   const settle = await SettleClient.connect({ address: 'localhost:7233' });
 *   await settle.start('ticket-4711', { workspace: '/workspaces/ticket-4711' });
 *   const { calls } = await settle.runTurn('ticket-4711', 0, [{ call_id: 'c1', tool: 'file_view', args: {...} }]);
 *   await settle.finish('ticket-4711', 'completed', 'task done');
 */
import { Client, Connection, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
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
  type TrajectoryInput,
  type TrajectoryResult,
} from '../workflows/definitions';
import type { trajectoryWorkflow } from '../workflows/trajectory';
import { RunTurnInputSchema, TrajectoryRequestSchema, type TrajectoryRequest } from '../core/trajectory-input';
import { parseArgs } from '../core/validation';

export const DEFAULT_TASK_QUEUE = 'settle';

export interface TrajectoryStatusReport {
  trajectoryId: string;
  /** Temporal's view: RUNNING, COMPLETED, FAILED, CANCELLED, … */
  runStatus: string;
  /** settle's view (search attribute SettleTrajectoryStatus). */
  status: string | null;
  inDoubt: number;
  pendingApprovals: number;
  waitingFor: string | null;
  calls: CallReport[];
}

export class SettleClient {
  constructor(
    readonly client: Client,
    readonly taskQueue = DEFAULT_TASK_QUEUE,
  ) {}

  static async connect(options: { address: string; namespace?: string; taskQueue?: string }): Promise<SettleClient> {
    const connection = await Connection.connect({ address: options.address });
    return new SettleClient(new Client({ connection, namespace: options.namespace ?? 'default' }), options.taskQueue);
  }

  async close(): Promise<void> {
    await this.client.connection.close();
  }

  /**
   * Starts a trajectory whose workflow id is the trajectory id (part of every key). The input is
   * checked against the input contract first: a broken one throws InputError naming the field,
   * and nothing starts.
   */
  async start(trajectoryId: string, input: TrajectoryRequest): Promise<WorkflowHandleWithFirstExecutionRunId<typeof trajectoryWorkflow>> {
    parseArgs(TrajectoryRequestSchema, input, 'input');
    return this.client.workflow.start<typeof trajectoryWorkflow>('trajectoryWorkflow', {
      taskQueue: this.taskQueue,
      workflowId: trajectoryId,
      args: [input],
    });
  }

  /**
   * Runs one turn's calls and returns their observations. The update id is derived from
   * (trajectory, turn): an orchestrator that retries this after a crash gets the same result
   * and executes nothing twice.
   */
  async runTurn(trajectoryId: string, turn: number, calls: ProposedCall[]): Promise<RunTurnResult> {
    // The workflow's validator applies the same contract; checking here first gives a clear
    // error even for input too deep to serialise.
    parseArgs(RunTurnInputSchema, { turn, calls }, '');
    return this.handle(trajectoryId).executeUpdate(runTurnUpdate, {
      args: [{ turn, calls }],
      updateId: runTurnUpdateId(trajectoryId, turn),
    });
  }

  async finish(trajectoryId: string, outcome: FinishInput['outcome'], reason: string): Promise<void> {
    await this.handle(trajectoryId).executeUpdate(finishUpdate, { args: [{ outcome, reason }] });
  }

  async approve(trajectoryId: string, key: string, approver: string, decision: 'approve' | 'deny', reason: string): Promise<void> {
    await this.handle(trajectoryId).executeUpdate(approveCallUpdate, { args: [{ key, approver, decision, reason }] });
  }

  async settle(trajectoryId: string, settlement: SettleCallInput): Promise<{ state: string }> {
    return this.handle(trajectoryId).executeUpdate(settleCallUpdate, { args: [settlement] });
  }

  async result(trajectoryId: string): Promise<TrajectoryResult> {
    return this.handle(trajectoryId).result();
  }

  async status(trajectoryId: string): Promise<TrajectoryStatusReport> {
    const handle = this.handle(trajectoryId);
    const description = await handle.describe();
    const sa = description.searchAttributes as Record<string, unknown[] | undefined>;
    let calls: CallReport[] = [];
    let waitingFor: string | null = null;
    if (description.status.name === 'COMPLETED') {
      // A closed trajectory answers from its result: no worker needed.
      calls = (await handle.result()).calls;
    } else {
      try {
        calls = await handle.query(callsQuery);
        waitingFor = await handle.query(waitingForQuery);
      } catch {
        // A closed workflow whose worker is gone cannot answer queries.
      }
    }
    return {
      trajectoryId,
      runStatus: description.status.name,
      status: (sa.SettleTrajectoryStatus?.[0] as string | undefined) ?? null,
      inDoubt: Number(sa.SettleInDoubtCount?.[0] ?? 0),
      pendingApprovals: Number(sa.SettlePendingApprovals?.[0] ?? 0),
      waitingFor,
      calls,
    };
  }

  handle(trajectoryId: string): WorkflowHandle {
    return this.client.workflow.getHandle(trajectoryId);
  }
}
