/**
 * An agent written with the Vercel AI SDK (examples/ai-sdk-agent: `generateText` with `stopWhen`)
 * against the real stack and a local OpenAI-compatible server that scripts the model's turns:
 * its tool calls are settled calls — a malformed call is answered with the broken rule and
 * counted, a repeated tool call id runs once, and a worker SIGKILLed in the middle of a tool call
 * leaves the effect applied exactly once, counted at the effect. Its HTTP tool is settle's built-in
 * http_request, called from the agent's workflow with a capability (write on the notes, connect to
 * the orders host), against a service that behaves like Stripe's idempotent endpoints.
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
import { sign } from '../../activities/capability/signer';
import { callsQuery } from '../../workflows/definitions';
import type { agentWorkflow } from '../../examples/ai-sdk-agent/workflows';
import { startChatServer, type ChatServer, type ScriptedReply } from '../support/chat-server';
import { openTestDb, tempWorkspace, testKeyRing, uniqueId } from '../support/env';
import { startIdempotentServer, type IdempotentServer } from '../support/idempotent-http-server';
import { killWorkerProcesses, startWorkerProcess, type WorkerProcess } from '../support/worker-process';

const EXAMPLE = new URL('../../examples/ai-sdk-agent/', import.meta.url);
const WORKER = fileURLToPath(new URL('worker.ts', EXAMPLE));
const db = openTestDb(2);
const ring = testKeyRing();
/** The worker's operator holds the ring's keys (SETTLE_CAP_KEYS: kid:base64secret, …). */
const capKeys = [...ring.keys].map(([kid, secret]) => `${kid}:${secret.toString('base64')}`).join(',');
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
  orders: IdempotentServer;
  start(): WorkerProcess;
  /** The capability a run of the agent is started with: write on the notes, connect to the orders host. */
  capability(workflowId: string): unknown;
}

/** The model's scripted turns are written once the orders service (whose URL they hold) is up. */
async function agentWith(script: (orders: IdempotentServer) => ScriptedReply[]): Promise<Agent> {
  const orders = await startIdempotentServer();
  const model = await startChatServer(script(orders));
  servers.push(model, orders);
  const notesDir = tempWorkspace('ai-sdk-notes');
  fs.writeFileSync(path.join(notesDir, 'plan.txt'), 'status: draft\n');
  const taskQueue = uniqueId('ai-sdk');
  const env = {
    TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE: bundlePath,
    MODEL_BASE_URL: model.baseUrl,
    NOTES_DIR: notesDir,
    SETTLE_CAP_KEYS: capKeys,
    // As the worker's operator: the orders service's loopback address and port may be reached.
    SETTLE_EGRESS_ALLOW_INTERNAL: `127.0.0.1:${orders.port}`,
  };
  const capability = (workflowId: string) =>
    sign(
      {
        v: 1,
        aud: workflowId,
        rights: ['write', 'connect'],
        objects: [`path:${notesDir}`, `host:127.0.0.1:${orders.port}`],
        pred: { max_cost: 5, budget: 100 },
        exp: Date.now() + 3_600_000,
        parent: null,
        depth: 0,
      },
      ring,
    );
  return { taskQueue, notesDir, model, orders, start: () => startWorkerProcess(WORKER, env), capability };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
const order = { item: 'blue-pen', quantity: 3 };
/** The model's http_request call placing the order; `headers: []` is the default its schema fills in (the key is over validated arguments). */
const placeOrder = (orders: IdempotentServer) => ({ method: 'POST', url: `${orders.url}/v1/orders`, body: JSON.stringify(order) });
const validated = (args: Record<string, unknown>) => ({ ...args, headers: [] });
/** The POSTs the service received, by key (repeats included). */
const posts = (orders: IdempotentServer) =>
  orders
    .requests()
    .filter((r) => r.method === 'POST')
    .map((r) => r.key);

describe('an AI SDK agent whose tools are settled', () => {
  it('answers a malformed call with the broken rule, runs a repeated tool call id once, and counts both for settle stats', async () => {
    const agent = await agentWith((orders) => [
      { tool_calls: [call('call_a', 'edit_file', { file: 'plan.txt', find: 'draft' })] }, // no `replace`
      { tool_calls: [call('call_b', 'edit_file', { file: 'plan.txt', find: 'draft', replace: 'approved' })] }, // the repair
      { tool_calls: [call('call_c', 'http_request', placeOrder(orders)), call('call_c', 'http_request', placeOrder(orders))] }, // one id, twice
      { content: 'Plan approved and pens ordered.' },
    ]);
    const worker = agent.start();
    const workflowId = uniqueId('ai-sdk-agent');
    const handle = await client.workflow.start<typeof agentWorkflow>('agentWorkflow', {
      workflowId,
      taskQueue: agent.taskQueue,
      args: ['Approve the plan, then order three blue pens.', agent.capability(workflowId)],
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
    const key = callKey({ workflowId, turn: 2, callId: 'call_c', tool: 'http_request', args: validated(placeOrder(agent.orders)) });
    expect(reports.map((r) => [r.turn, r.callId, r.tool, r.resolution])).toEqual([
      [1, 'call_b', 'edit_file', 'executed'],
      [2, 'call_c', 'http_request', 'executed'],
      [2, 'call_c', 'http_request', 'replayed'],
    ]);
    expect(reports[1]!.key).toBe(key);
    // The key went downstream as Idempotency-Key: one request, one order, counted at the service.
    expect(posts(agent.orders)).toEqual([key]);
    const effects = agent.orders.effects();
    expect(effects).toEqual([{ id: expect.any(String), collection: 'orders', key, body: order }]);
    // Both tool results for call_c went back to the model, the same order.
    const last = agent.model.requests[3]!.body.messages.filter((m: { tool_call_id?: string }) => m.tool_call_id === 'call_c');
    const outputs = last.map((m: { content: string }) => JSON.parse(m.content).output);
    expect(outputs).toHaveLength(2);
    expect(outputs[1]).toBe(outputs[0]);
    expect(JSON.parse(outputs[0])).toMatchObject({ status: 200, body: { id: effects[0]!.id, object: 'order', ...order } });

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
      { turn: 2, call_id: 'call_c', tool: 'http_request', valid: true, field: null },
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
    const agent = await agentWith((orders) => [
      { tool_calls: [call('call_k', 'http_request', placeOrder(orders))] },
      { content: 'Ordered.' },
    ]);
    const a = agent.start();
    // The service applies the order and holds its answer; the worker dies before the answer reaches it.
    const held = agent.orders.hold();
    const workflowId = uniqueId('ai-sdk-kill');
    const handle = await client.workflow.start<typeof agentWorkflow>('agentWorkflow', {
      workflowId,
      taskQueue: agent.taskQueue,
      args: ['Order three blue pens.', agent.capability(workflowId)],
    });
    await held.reached;
    a.child.kill('SIGKILL');
    expect(await a.exited, a.output()).toBe('SIGKILL');
    held.release();

    const b = agent.start();
    const result = await handle.result();
    const reports = await handle.query(callsQuery);
    b.child.kill('SIGTERM');
    await b.exited;

    const key = callKey({ workflowId, turn: 0, callId: 'call_k', tool: 'http_request', args: validated(placeOrder(agent.orders)) });
    expect(result).toEqual({ text: 'Ordered.', steps: 2 });
    expect(reports.map((r) => [r.callId, r.resolution, r.state])).toEqual([['call_k', 'settled_by_probe', 'COMPLETED']]);
    // Counted at the effect: one order under the call's key (the probe's repeat got the stored answer).
    expect(agent.orders.effects()).toEqual([{ id: expect.any(String), collection: 'orders', key, body: order }]);
    expect(posts(agent.orders)).toEqual([key, key]);
    // The model was asked once per step: the restarted worker took the recorded replies.
    expect(agent.model.requests).toHaveLength(2);
  }, 240_000);
});

function fail(message: string): never {
  throw new Error(message);
}
const quiet = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
