/**
 * The model-driven loop against a local server speaking the chat-completions protocol: the
 * workflow offers the catalog, executes proposed calls, answers a malformed call with a
 * validation observation, and stops at a final answer, a turn limit or the token budget.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SettleClient } from '../../client/index';
import { publishedCatalog } from '../../core/tools/catalog';
import { startChatServer, type ScriptedReply } from '../support/chat-server';
import { sql } from 'kysely';
import { openTestDb, startTestWorker, tempWorkspace, uniqueId, type RunningWorker } from '../support/env';

let worker: RunningWorker;
let settle: SettleClient;

/** A scripted model server the test worker's operator allows (SETTLE_MODEL_ENDPOINTS). */
async function serve(script: ScriptedReply[]) {
  const server = await startChatServer(script);
  worker.allowModelEndpoint(server.baseUrl);
  return server;
}
const API_KEY = `sk-test-${uniqueId('secret')}`;

beforeAll(async () => {
  process.env.TEST_MODEL_KEY = API_KEY; // the in-process worker reads it (its operator allows it), the workflow never sees it
  worker = await startTestWorker();
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(async () => {
  await worker?.stop();
  delete process.env.TEST_MODEL_KEY;
});

describe('model-driven trajectory', () => {
  it('runs proposed calls, corrects a malformed one from its validation observation, and ends at the final answer', async () => {
    const ws = tempWorkspace('model');
    const file = path.join(ws, 'app.ts');
    fs.writeFileSync(file, "const greeting = 'hi';\n");
    const server = await serve([
      { tool_calls: [{ id: 'call_a', name: 'file_edit', arguments: JSON.stringify({ path: file, old_str: "'hi'" }) }] }, // new_str missing
      { tool_calls: [{ id: 'call_b', name: 'file_edit', arguments: JSON.stringify({ path: file, old_str: "'hi'", new_str: "'hello'" }) }] },
      { content: 'Changed the greeting to hello.' },
    ]);
    try {
      const id = uniqueId('model');
      await settle.start(id, {
        workspace: ws,
        model: { baseUrl: server.baseUrl, model: 'scripted-model', apiKeyEnv: 'TEST_MODEL_KEY', task: 'Say hello instead of hi.' },
      });
      const result = await settle.result(id);

      expect(result.finalAnswer).toBe('Changed the greeting to hello.');
      expect(result.calls.map((c) => [c.callId, c.resolution])).toEqual([
        ['call_a', 'invalid'],
        ['call_b', 'executed'],
      ]);
      expect(fs.readFileSync(file, 'utf8')).toBe("const greeting = 'hello';\n");

      // What the "model" saw: the catalog as published, the task, then the observations.
      const [first, second, third] = server.requests;
      expect(first!.headers.authorization).toBe(`Bearer ${API_KEY}`);
      expect(first!.body.tools.map((t: any) => t.function.name)).toEqual(publishedCatalog().map((t) => t.name));
      expect(first!.body.messages).toEqual([{ role: 'user', content: 'Say hello instead of hi.' }]);
      const validation = second!.body.messages.at(-1);
      expect(validation).toMatchObject({ role: 'tool', tool_call_id: 'call_a' });
      expect(JSON.parse(validation.content).error).toBe('invalid call: args.new_str must be present (required, a string)');
      expect(JSON.parse(third!.body.messages.at(-1).content)).toMatchObject({ output: `replaced 1 block in ${file}`, exit_status: 0 });

      // Every proposal is counted per tool, the malformed one with the field and rule it broke.
      const db = openTestDb(1);
      const rows = await sql<{ call_id: string; tool: string; valid: boolean; field: string | null }>`
        select call_id, tool, valid, field from settle_tool_calls where trajectory_id = ${id} order by call_id`.execute(db);
      await db.destroy();
      expect(rows.rows).toEqual([
        { call_id: 'call_a', tool: 'file_edit', valid: false, field: 'args.new_str' },
        { call_id: 'call_b', tool: 'file_edit', valid: true, field: null },
      ]);

      // The API key never entered workflow history; only the variable's name did.
      const history = JSON.stringify(await settle.handle(id).fetchHistory());
      expect(history).not.toContain(API_KEY);
    } finally {
      await server.close();
    }
  });

  it('answers arguments that are not JSON, and stops at the turn limit', async () => {
    const ws = tempWorkspace('model');
    const server = await serve([
      { tool_calls: [{ id: 'x1', name: 'file_view', arguments: '{"path": "/a", offset: 1' }] },
      { tool_calls: [{ id: 'x2', name: 'grep_search', arguments: JSON.stringify({ pattern: 'nothing', path: ws }) }] },
    ]);
    try {
      const id = uniqueId('model');
      await settle.start(id, { workspace: ws, model: { baseUrl: server.baseUrl, model: 'm', task: 'look around', maxTurns: 2 } });
      const result = await settle.result(id);
      expect(result.reason).toBe('turn limit reached (2)');
      expect(result.finalAnswer).toBeNull();
      expect(result.calls.map((c) => [c.callId, c.resolution])).toEqual([
        ['x1', 'invalid'],
        ['x2', 'read'],
      ]);
      expect(JSON.parse(server.requests[1]!.body.messages.at(-1).content).error).toMatch(/^invalid call: args must be valid JSON/);
    } finally {
      await server.close();
    }
  });

  it('answers arguments that are not I-JSON (a repeated member, a rounded number, deep nesting) as malformed calls, never a failed task', async () => {
    const ws = tempWorkspace('model');
    const deep = `{"path": "${ws}/a", "x": ${'['.repeat(100)}${']'.repeat(100)}}`;
    const server = await serve([
      {
        tool_calls: [
          { id: 'd1', name: 'file_view', arguments: `{"path": "${ws}/a", "path": "${ws}/b"}` },
          { id: 'd2', name: 'file_view', arguments: `{"path": "${ws}/a", "offset": 9007199254740993}` },
          { id: 'd3', name: 'file_view', arguments: deep },
        ],
      },
      { content: 'done' },
    ]);
    try {
      const id = uniqueId('model');
      await settle.start(id, { workspace: ws, model: { baseUrl: server.baseUrl, model: 'm', task: 'look', maxTurns: 2 } });
      const result = await settle.result(id);
      expect(result.finalAnswer).toBe('done');
      expect(result.calls.map((c) => [c.callId, c.resolution, c.key])).toEqual([
        ['d1', 'invalid', null],
        ['d2', 'invalid', null],
        ['d3', 'invalid', null],
      ]);
      const messages = (server.requests[1]!.body as { messages: { content: string }[] }).messages;
      const answers = messages.slice(-3).map((m) => (JSON.parse(m.content) as { error: string }).error);
      expect(answers[0]).toMatch(/^invalid call: args\.path must occur only once in its object/);
      expect(answers[1]).toMatch(
        /^invalid call: args\.offset must round-trip exactly through an IEEE 754 double \(9007199254740993 would be read as 9007199254740992/,
      );
      expect(answers[2]).toMatch(/^invalid call: args\.x(\[0\]){63} must nest arrays and objects at most 64 levels deep$/);
    } finally {
      await server.close();
    }
  });

  it('stops when the token budget is spent', async () => {
    const ws = tempWorkspace('model');
    const server = await serve([
      { tool_calls: [{ id: 't1', name: 'grep_search', arguments: JSON.stringify({ pattern: 'a', path: ws }) }], total_tokens: 600 },
      { tool_calls: [{ id: 't2', name: 'grep_search', arguments: JSON.stringify({ pattern: 'b', path: ws }) }], total_tokens: 600 },
      { content: 'never asked' },
    ]);
    try {
      const id = uniqueId('model');
      await settle.start(id, { workspace: ws, model: { baseUrl: server.baseUrl, model: 'm', task: 't', maxTotalTokens: 1000 } });
      const result = await settle.result(id);
      expect(result.reason).toBe('token budget exhausted (1200 of 1000)');
      expect(server.requests).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});
