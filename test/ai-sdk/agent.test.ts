/**
 * An agent written with the Vercel AI SDK (examples/ai-sdk-agent: `generateText` with `stopWhen`)
 * against the real stack and a local OpenAI-compatible server that scripts the model's turns:
 * its tool calls are settled calls — a malformed call is answered with the broken rule and
 * counted, a repeated tool call id runs once, and a worker SIGKILLed in the middle of a tool call
 * leaves the effect applied exactly once, counted at the effect (the orders service).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { SettlePlugin } from '../../api/worker';
import { callKey } from '../../api/testing';
import { CallStats } from '../../activities/store/call-stats';
import { callsQuery } from '../../workflows/definitions';
import type { agentWorkflow } from '../../examples/ai-sdk-agent/workflows';
import { startChatServer, type ChatServer, type ScriptedReply } from '../support/chat-server';
import { openTestDb, tempWorkspace, uniqueId } from '../support/env';
import { killWorkerProcesses, startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { startOrderServer, type OrderServer } from './order-server';

const EXAMPLE = new URL('../../examples/ai-sdk-agent/', import.meta.url);
const WORKER = fileURLToPath(new URL('worker.ts', EXAMPLE));
const db = openTestDb(2);
let bundlePath: string;
let connection: Connection;
let client: Client;
const servers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  // Bundled once, with the plugin's bundler hook (the AI SDK's Web globals first), for every worker process.
  const plugin = new SettlePlugin({
    models: () => fail('no model calls in the bundler'),
    databaseUrl: inject('databaseUrl'),
    migrate: false,
  });
  const bundle = await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('workflows.ts', EXAMPLE)),
    plugins: [plugin],
    logger: quiet,
  });
  bundlePath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-ai-sdk-bundle-')), 'bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
}, 180_000);

afterAll(async () => {
  killWorkerProcesses();
  await Promise.all(servers.map((s) => s.close()));
  await connection?.close();
  await db.destroy();
});

interface Agent {
  taskQueue: string;
  notesDir: string;
  model: ChatServer;
  orders: OrderServer;
  start(): WorkerProcess;
}

async function agentWith(script: ScriptedReply[]): Promise<Agent> {
  const model = await startChatServer(script);
  const orders = await startOrderServer();
  servers.push(model, orders);
  const notesDir = tempWorkspace('ai-sdk-notes');
  fs.writeFileSync(path.join(notesDir, 'plan.txt'), 'status: draft\n');
  const taskQueue = uniqueId('ai-sdk');
  const env = {
    TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE: bundlePath,
    MODEL_BASE_URL: model.baseUrl,
    NOTES_DIR: notesDir,
    ORDERS_URL: orders.url,
  };
  return { taskQueue, notesDir, model, orders, start: () => startWorkerProcess(WORKER, env) };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
const order = { item: 'blue-pen', quantity: 3 };

describe('an AI SDK agent whose tools are settled', () => {
  it('answers a malformed call with the broken rule, runs a repeated tool call id once, and counts both for settle stats', async () => {
    const agent = await agentWith([
      { tool_calls: [call('call_a', 'edit_file', { file: 'plan.txt', find: 'draft' })] }, // no `replace`
      { tool_calls: [call('call_b', 'edit_file', { file: 'plan.txt', find: 'draft', replace: 'approved' })] }, // the repair
      { tool_calls: [call('call_c', 'place_order', order), call('call_c', 'place_order', order)] }, // one id, twice
      { content: 'Plan approved and pens ordered.' },
    ]);
    const worker = agent.start();
    const workflowId = uniqueId('ai-sdk-agent');
    const handle = await client.workflow.start<typeof agentWorkflow>('agentWorkflow', {
      workflowId,
      taskQueue: agent.taskQueue,
      args: ['Approve the plan, then order three blue pens.'],
    });
    const result = await handle.result();
    const reports = await handle.query(callsQuery);
    worker.child.kill('SIGTERM');
    await worker.exited;

    expect(result).toEqual({ text: 'Plan approved and pens ordered.', steps: 4 });
    // The model saw the validation message for call_a, and its repair ran once.
    const toolReplies = agent.model.requests[1]!.body.messages.filter((m: { role: string }) => m.role === 'tool');
    expect(toolReplies).toHaveLength(1);
    expect(toolReplies[0]).toMatchObject({ tool_call_id: 'call_a' });
    expect(toolReplies[0].content).toContain('invalid call: args.replace must be present');
    expect(fs.readFileSync(path.join(agent.notesDir, 'plan.txt'), 'utf8')).toBe('status: approved\n');

    // The model's toolCallId is the call id and the step the turn; the repeated id ran once and replayed.
    const key = callKey({ workflowId, turn: 2, callId: 'call_c', tool: 'place_order', args: order });
    expect(reports.map((r) => [r.turn, r.callId, r.tool, r.resolution])).toEqual([
      [1, 'call_b', 'edit_file', 'executed'],
      [2, 'call_c', 'place_order', 'executed'],
      [2, 'call_c', 'place_order', 'replayed'],
    ]);
    expect(reports[1]!.key).toBe(key);
    expect(agent.orders.posts).toEqual([key]);
    expect([...agent.orders.applied.keys()]).toEqual([key]);
    // Both tool results for call_c went back to the model, the same order.
    const last = agent.model.requests[3]!.body.messages.filter((m: { tool_call_id?: string }) => m.tool_call_id === 'call_c');
    expect(last.map((m: { content: string }) => JSON.parse(m.content).output)).toEqual([
      JSON.stringify({ order_id: 'order-1', ...order }),
      JSON.stringify({ order_id: 'order-1', ...order }),
    ]);

    // settle stats counts the proposals: the malformed one with its rule, the repeat once.
    const counted = await db
      .selectFrom('settle_tool_calls')
      .select(['turn', 'call_id', 'tool', 'valid', 'field'])
      .where('trajectory_id', '=', workflowId)
      .orderBy('turn')
      .execute();
    expect(counted).toEqual([
      { turn: 0, call_id: 'call_a', tool: 'edit_file', valid: false, field: 'args.replace' },
      { turn: 1, call_id: 'call_b', tool: 'edit_file', valid: true, field: null },
      { turn: 2, call_id: 'call_c', tool: 'place_order', valid: true, field: null },
    ]);
    const [editStats] = await new CallStats(db).stats({ tool: 'edit_file' });
    expect(editStats!.malformed).toBeGreaterThanOrEqual(1);

    // The AI SDK's loop replays from history as it ran (model replies and tool calls recorded).
    await Worker.runReplayHistory(
      { workflowBundle: { code: fs.readFileSync(bundlePath, 'utf8') }, replayName: 'ai-sdk-agent' },
      await handle.fetchHistory(),
    );
  }, 240_000);

  it('a worker SIGKILLed in the middle of a tool call: the order is applied exactly once, counted at the orders service', async () => {
    const agent = await agentWith([{ tool_calls: [call('call_k', 'place_order', order)] }, { content: 'Ordered.' }]);
    const a = agent.start();
    // The service applies the order, then the worker dies before the answer reaches it.
    agent.orders.afterApply = async () => {
      a.child.kill('SIGKILL');
      await a.exited;
    };
    const workflowId = uniqueId('ai-sdk-kill');
    const handle = await client.workflow.start<typeof agentWorkflow>('agentWorkflow', {
      workflowId,
      taskQueue: agent.taskQueue,
      args: ['Order three blue pens.'],
    });
    expect(await a.exited, a.output()).toBe('SIGKILL');
    agent.orders.afterApply = null;

    const b = agent.start();
    const result = await handle.result();
    const reports = await handle.query(callsQuery);
    b.child.kill('SIGTERM');
    await b.exited;

    const key = callKey({ workflowId, turn: 0, callId: 'call_k', tool: 'place_order', args: order });
    expect(result).toEqual({ text: 'Ordered.', steps: 2 });
    expect(reports.map((r) => [r.callId, r.resolution, r.state])).toEqual([['call_k', 'settled_by_probe', 'COMPLETED']]);
    // Counted at the effect: one order under the call's key.
    expect([...agent.orders.applied.entries()]).toEqual([[key, { order_id: 'order-1', ...order }]]);
    // The model was asked once per step: the restarted worker took the recorded replies.
    expect(agent.model.requests).toHaveLength(2);
  }, 240_000);
});

function fail(message: string): never {
  throw new Error(message);
}
const quiet = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
