/**
 * A team's own tools, settled from a team's own workflow through SettlePlugin, against the real
 * stack (Temporal dev server, PostgreSQL): each logical call runs once, an exception after the
 * effect is settled by the tool's probe, and definitions that break a rule are refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { z } from 'zod';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { SettlePlugin, defineTool, type SettlePluginOptions } from '../../api/worker';
import { callKey } from '../../api/testing';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import { installRuntime } from '../../workers/runtime';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { appendLine, downstreamKeys, failAfterEffect, teamTools } from './fixtures/tools';
import type { appendThenUndo, appendTwice, teamWorkflow } from './fixtures/workflows';

const WORKFLOWS = fileURLToPath(new URL('./fixtures/workflows.ts', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);
let client: Client;
let clientConnection: Connection;
let workerConnection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
const taskQueue = uniqueId('team');

function plugin(tools: SettlePluginOptions['tools']) {
  return new SettlePlugin({
    tools,
    databaseUrl: inject('databaseUrl'),
    policy: makeWorkerPolicy({ workspaceRoot: testWorkspaceRoot(), modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: false }),
    warn: () => {},
  });
}

beforeAll(async () => {
  installRuntime('WARN');
  // The team's workflow file, bundled once for this file's worker.
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: quietLogger });
  workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  worker = await Worker.create({
    plugins: [plugin([...teamTools])],
    connection: workerConnection,
    taskQueue,
    workflowBundle: { code: bundle.code },
  });
  running = worker.run();
  clientConnection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection: clientConnection });
}, 120_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await workerConnection?.close();
  await clientConnection?.close();
  await db.destroy();
});

function runTeam(workflowId: string, calls: Parameters<typeof teamWorkflow>[0]) {
  return client.workflow.execute<typeof teamWorkflow>('teamWorkflow', { workflowId, taskQueue, args: [calls] });
}

describe('a team tool settled from a team workflow', () => {
  it('runs an A2 call once when the workflow calls it twice with the same call id', async () => {
    const file = path.join(tempWorkspace('team'), 'log.txt');
    const workflowId = uniqueId('team-a2');
    const results = await client.workflow.execute<typeof appendTwice>('appendTwice', { workflowId, taskQueue, args: [file] });
    expect(results).toEqual(['executed', 'replayed', 'hello']);
    const key = callKey({ workflowId, callId: 'greet', tool: 'append_line', args: { file, text: 'hello' } });
    expect(fs.readFileSync(file, 'utf8')).toBe(`${key} hello\n`);
    expect((await store.get(key))?.state).toBe('COMPLETED');
  });

  it('hands an A1 call its derived key, and runs it once', async () => {
    const workflowId = uniqueId('team-a1');
    const call = { tool: 'charge_card' as const, args: { amount_cents: 500 }, callId: 'pay' };
    const [first, again] = await runTeam(workflowId, [call, call]);
    const key = callKey({ workflowId, callId: 'pay', tool: 'charge_card', args: { amount_cents: 500 } });
    expect(first).toMatchObject({ key, resolution: 'executed', state: 'COMPLETED', result: { charged_cents: 500, idempotency_key: key } });
    expect(again).toMatchObject({ key, resolution: 'replayed', result: { idempotency_key: key } });
    expect(downstreamKeys.filter((k) => k === key)).toHaveLength(1);
  });

  it('settles an exception after the effect through the tool probe, and the effect happens once', async () => {
    const file = path.join(tempWorkspace('team'), 'log.txt');
    const workflowId = uniqueId('team-doubt');
    const args = { file, text: 'once' };
    const key = callKey({ workflowId, callId: 'w1', tool: appendLine.name, args });
    failAfterEffect.add(key);
    const [result] = await runTeam(workflowId, [{ tool: 'append_line', args, callId: 'w1' }]);
    expect(result).toMatchObject({ key, resolution: 'settled_by_probe', state: 'COMPLETED', result: { appended: 'once' } });
    expect(fs.readFileSync(file, 'utf8')).toBe(`${key} once\n`);
    const record = await store.get(key);
    expect(record).toMatchObject({ state: 'COMPLETED', settledBy: 'probe:append_line' });
  });

  it('releases a call whose execute proves no effect (NoEffect) and gives up after bounded retries', async () => {
    const workflowId = uniqueId('team-noeffect');
    const [result] = await runTeam(workflowId, [{ tool: 'charge_card', args: { amount_cents: 13 }, callId: 'declined' }]);
    expect(result).toMatchObject({ resolution: 'gave_up', state: 'NOT_EXECUTED' });
    expect(result!.result).toBeUndefined();
    expect(result!.observation.error).toContain('refused the card before charging');
  });

  it('runs an A0 tool read-only, without an endpoint record', async () => {
    const file = path.join(tempWorkspace('team'), 'log.txt');
    fs.writeFileSync(file, 'a\nb\n');
    const [result] = await runTeam(uniqueId('team-a0'), [{ tool: 'count_lines', args: { file }, callId: 'count' }]);
    expect(result).toMatchObject({ resolution: 'read', state: 'NO_RECORD', result: { lines: 2 } });
    expect(await store.get(result!.key)).toBeUndefined();
  });

  it('compensates completed A2 calls newest first through their definition, each undoing call settled, once', async () => {
    const file = path.join(tempWorkspace('team'), 'log.txt');
    const workflowId = uniqueId('team-undo');
    const { first, again } = await client.workflow.execute<typeof appendThenUndo>('appendThenUndo', {
      workflowId,
      taskQueue,
      args: [file],
    });
    const keyOf = (callId: string, text: string) => callKey({ workflowId, callId, tool: 'append_line', args: { file, text } });
    expect(first).toMatchObject([
      { forKey: keyOf('two', 'two'), tool: 'remove_line', resolution: 'executed' },
      { forKey: keyOf('one', 'one'), tool: 'remove_line', resolution: 'executed' },
    ]);
    expect(first.map((c) => c.key)).toEqual([
      callKey({ workflowId, callId: 'two#compensate', tool: 'remove_line', args: { file, text: 'two' } }),
      callKey({ workflowId, callId: 'one#compensate', tool: 'remove_line', args: { file, text: 'one' } }),
    ]);
    expect(again).toEqual([]); // the A1 call is never compensated, and nothing twice
    expect(fs.readFileSync(file, 'utf8')).toBe('');
    await expect(
      runTeam(uniqueId('team-reserved'), [{ tool: 'count_lines', args: { file }, callId: 'x#compensate' }]),
    ).rejects.toMatchObject({ cause: { message: expect.stringContaining('call_id must not end with #compensate') } });
  });

  it('refuses invalid arguments and tools the worker does not register, naming them', async () => {
    await expect(runTeam(uniqueId('team-bad'), [{ tool: 'charge_card', args: { amount_cents: -5 }, callId: 'neg' }])).rejects.toMatchObject(
      {
        cause: { type: 'SettleInvalidArgs', message: expect.stringMatching(/invalid arguments for charge_card: .*amount_cents/) },
      },
    );
    await expect(
      runTeam(uniqueId('team-builtin'), [{ tool: 'file_view' as 'count_lines', args: { path: 'x' }, callId: 'v' }]),
    ).rejects.toMatchObject({ cause: { message: expect.stringContaining('file_view is a built-in tool') } });
  });
});

describe('SettlePlugin refuses tool definitions when the worker is made', () => {
  const loose = defineTool({
    name: 'loose_tool',
    description: 'Takes anything.',
    args: z.object({ id: z.string().max(10).describe('An id') }),
    level: 'A2',
    execute: async () => 'done',
  });

  it('refuses a definition that breaks a settle lint rule, naming the rule, unless it accepts the finding with a reason', () => {
    expect(() => plugin([loose])).toThrow(/loose_tool breaks settle lint's rule closed-objects at \/parameters/);
    const accepted = defineTool({ ...looseDefinition(), accept: [{ rule: 'closed-objects', reason: 'the API ignores unknown keys' }] });
    expect(() => plugin([accepted])).not.toThrow();
  });

  it('refuses a duplicate name and a name a built-in tool has', () => {
    expect(() => plugin([appendLine, appendLine])).toThrow('append_line is defined twice');
    const shadow = defineTool({ ...looseDefinition(), name: 'file_edit', accept: [{ rule: 'closed-objects', reason: 'test' }] });
    expect(() => plugin([shadow])).toThrow("file_edit is a built-in tool's name; a team tool may not shadow it");
    const subagent = defineTool({ ...looseDefinition(), name: 'spawn_subagent', accept: [{ rule: 'closed-objects', reason: 'test' }] });
    expect(() => plugin([subagent])).toThrow('spawn_subagent is a built-in tool');
  });

  it('lets the operator raise a level, never lower it', () => {
    const base = { tools: [appendLine], databaseUrl: inject('databaseUrl'), warn: () => {} };
    expect(new SettlePlugin({ ...base, levels: { append_line: 'A3' } }).registry.get('append_line')?.level).toBe('A3');
    expect(() => new SettlePlugin({ ...base, levels: { append_line: 'A1' } })).toThrow(
      /append_line is A2 by its definition.*not lower it to A1/,
    );
  });

  function looseDefinition() {
    return {
      name: 'loose_tool',
      description: 'Takes anything.',
      args: z.object({ id: z.string().max(10).describe('An id') }),
      level: 'A2' as const,
      execute: async () => 'done',
    };
  }
});

const quietLogger = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
