/**
 * The agent's worker: the team's tools and the model provider through SettlePlugin.
 *   TEMPORAL_ADDRESS, DATABASE_URL, TASK_QUEUE, MODEL_BASE_URL (an OpenAI-compatible server),
 *   NOTES_DIR; WORKFLOW_BUNDLE: a bundle made with the same plugin (else it bundles workflows.ts).
 * The operator's settings SettlePlugin reads: SETTLE_CAP_KEYS (to check the workflow's capability)
 * and, for an orders service on a loopback address, SETTLE_EGRESS_ALLOW_INTERNAL (host:port).
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { SettlePlugin } from '../../api/worker';
import { agentTools } from './tools';

const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
const models = createOpenAICompatible({ name: 'scripted', baseURL: process.env.MODEL_BASE_URL ?? 'http://127.0.0.1:8000/v1' });
const plugin = new SettlePlugin({ tools: [...agentTools], models, warn: () => {} });
const bundle = process.env.WORKFLOW_BUNDLE;
const worker = await Worker.create({
  plugins: [plugin],
  connection,
  taskQueue: process.env.TASK_QUEUE ?? 'ai-sdk-agent',
  ...(bundle ? { workflowBundle: { codePath: bundle } } : { workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)) }),
});
console.log('agent worker polling');
await worker.run();
await connection.close();
