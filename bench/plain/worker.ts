/**
 * The baseline's worker process (its own task queue): TEMPORAL_ADDRESS, PLAIN_TASK_QUEUE,
 * PLAIN_WORKFLOW_BUNDLE (optional pre-built bundle). Runs until SIGTERM/SIGINT.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { installRuntime } from '../../workers/runtime';
import { plainActivities } from './activities';

export const PLAIN_TASK_QUEUE = 'plain-bench';
export const PLAIN_WORKFLOWS_PATH = fileURLToPath(new URL('./workflows.ts', import.meta.url));

async function main(): Promise<void> {
  installRuntime('WARN');
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
  const bundle = process.env.PLAIN_WORKFLOW_BUNDLE;
  const worker = await Worker.create({
    connection,
    taskQueue: process.env.PLAIN_TASK_QUEUE ?? PLAIN_TASK_QUEUE,
    activities: plainActivities,
    ...(bundle ? { workflowBundle: { codePath: bundle } } : { workflowsPath: PLAIN_WORKFLOWS_PATH }),
  });
  console.log('plain worker: running');
  await worker.run();
  await connection.close();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
