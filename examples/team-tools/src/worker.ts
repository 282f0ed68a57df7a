/**
 * The team's worker: its workflows and its tools, with settle's plugin.
 *   TEMPORAL_ADDRESS (127.0.0.1:7233), TEMPORAL_TASK_QUEUE (billing), DATABASE_URL (settle's
 *   Postgres), BILLING_API_URL; WORKFLOW_BUNDLE: a pre-built workflow bundle (`npm run bundle` writes
 *   dist/workflow-bundle.js; else the workflows are bundled at start, seconds of CPU at every restart).
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { SettlePlugin } from 'settle/worker';
import { teamTools } from './tools.js';

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const taskQueue = process.env.TEMPORAL_TASK_QUEUE ?? 'billing';
const bundle = process.env.WORKFLOW_BUNDLE;

const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  taskQueue,
  plugins: [new SettlePlugin({ tools: [...teamTools], databaseUrl: process.env.DATABASE_URL })],
  ...(bundle ? { workflowBundle: { codePath: bundle } } : { workflowsPath: fileURLToPath(new URL('./workflows.js', import.meta.url)) }),
});
console.log(`billing worker: polling address=${address} queue=${taskQueue}`);
await worker.run();
await connection.close();
