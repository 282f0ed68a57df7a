/**
 * A trajectory whose shell call is IN_DOUBT and waits for an operator, made the honest way: a
 * real worker process lets the command through its start gate and is killed (SIGKILL) at once, so
 * the command dies with it and no exit is recorded; a second, healthy worker process then finds
 * the call in doubt, and its probe answers a final unknown (started, no exit, not running).
 */
import { inject } from 'vitest';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { WorkerProcess } from '../../chaos/infra/worker-process';
import type { EndpointStore } from '../../activities/store/endpoint-store';
import { SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { tempWorkspace, uniqueId } from './env';

export interface InDoubtShellCall {
  handle: WorkflowHandle;
  trajectoryId: string;
  taskQueue: string;
  key: string;
  workspace: string;
  command: string;
  /** The healthy worker process (the caller stops it). */
  worker: WorkerProcess;
}

export function workerProcess(taskQueue: string, failpoints = '', env: NodeJS.ProcessEnv = {}): WorkerProcess {
  return WorkerProcess.start({
    temporalAddress: inject('temporalAddress'),
    databaseUrl: inject('databaseUrl'),
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    failpoints,
    env,
    maxOutput: 4 * 1024 * 1024,
  });
}

export async function inDoubtShellCall(
  client: Client,
  store: EndpointStore,
  options: { summary?: string; command?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<InDoubtShellCall> {
  const taskQueue = uniqueId('tq-doubt');
  const workspace = tempWorkspace('doubt');
  const trajectoryId = uniqueId('doubt');
  const command = options.command ?? 'echo deployed >> deploy.log';
  const handle = await client.workflow.start('trajectoryWorkflow', {
    taskQueue,
    workflowId: trajectoryId,
    ...(options.summary ? { staticSummary: options.summary } : {}),
    args: [{ workspace, leaseMs: 1_000, turns: [{ turn: 0, calls: [{ call_id: 'deploy', tool: 'bash_execute', args: { command } }] }] }],
  });
  const dying = workerProcess(taskQueue, 'bash_execute.after_start=kill', options.env);
  const exit = await dying.exited;
  if (exit.signal !== 'SIGKILL') throw new Error(`the first worker should have been killed at its failpoint: ${JSON.stringify(exit)}`);
  const worker = workerProcess(taskQueue, '', options.env);
  const key = await until(async () => (await store.list({ trajectoryId }))[0]?.key, 'a record');
  await until(async () => {
    const d = await handle.describe();
    if (d.status.name !== 'RUNNING') {
      const failure = await handle.result().then(
        () => 'no failure',
        (err: Error & { cause?: Error & { activityType?: string; cause?: Error & { timeoutType?: number | string } } }) =>
          `${err.message}: ${err.cause?.message ?? ''} ${err.cause?.activityType ?? ''} ${err.cause?.cause?.message ?? ''} ${err.cause?.cause?.timeoutType ?? ''}`,
      );
      throw new Error(`trajectory ended (${d.status.name}) before waiting for an operator (${failure})`);
    }
    return d.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) === 'waiting_operator';
  }, 'waiting_operator');
  return { handle, trajectoryId, taskQueue, key, workspace, command, worker };
}

export async function until<T>(fn: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
