/**
 * Starts one billing workflow and prints its result as JSON.
 *   node dist/start.js <workflow id> <customer> <amount in cents> <ledger file>
 *   TEMPORAL_ADDRESS (127.0.0.1:7233), TEMPORAL_TASK_QUEUE (billing)
 */
import { Client, Connection } from '@temporalio/client';
import type { billingWorkflow } from './workflows.js';

const [workflowId, customer, amount, ledger] = process.argv.slice(2);
if (!workflowId || !customer || !amount || !ledger) {
  console.error('usage: start <workflow id> <customer> <amount in cents> <ledger file>');
  process.exit(2);
}
const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
const client = new Client({ connection });
const result = await client.workflow.execute<typeof billingWorkflow>('billingWorkflow', {
  workflowId,
  taskQueue: process.env.TEMPORAL_TASK_QUEUE ?? 'billing',
  args: [{ customer, amountCents: Number(amount), ledger }],
  // As settle's client starts trajectories: a tool moved to the local lane (SETTLE_LANES) runs inside
  // the workflow task, and this timeout is what notices a worker that died in the middle of it.
  workflowTaskTimeout: '3 seconds',
});
console.log(JSON.stringify(result));
await connection.close();
