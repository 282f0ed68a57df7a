/**
 * A model or orchestrator cannot push a trajectory past Temporal's payload limits (2 MB per
 * payload): large observations share a budget per turn, oversized or too-deep arguments are
 * malformed calls, and the trajectory completes. Real Temporal, real Postgres, a local
 * chat-completions server standing in for the model.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { MAX_ARGS_CHARS } from '../../core/trajectory-input';
import {
  LOCAL_READ_BYTES_PER_TASK,
  LOCAL_READ_MAX_BYTES,
  MAX_TURN_RESULT_CHARS,
  MAX_TURN_TOOL_MESSAGES_CHARS,
} from '../../core/history-budget';
import { PATCH_LOCAL_READ_BUDGET } from '../../workflows/patches';
import { startChatServer, type ScriptedReply } from '../support/chat-server';
import { startTestWorker, tempWorkspace, uniqueId, type RunningWorker } from '../support/env';

let worker: RunningWorker;
let settle: SettleClient;
/** A worker whose operator moved file_view to the local lane (SETTLE_LANES). */
let localReader: RunningWorker;

/** A scripted model server the test worker's operator allows (SETTLE_MODEL_ENDPOINTS). */
async function serve(script: ScriptedReply[]) {
  const server = await startChatServer(script);
  worker.allowModelEndpoint(server.baseUrl);
  return server;
}

beforeAll(async () => {
  [worker, localReader] = await Promise.all([startTestWorker(), startTestWorker({ policy: { lanes: { file_view: 'local' } } })]);
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(() => Promise.all([worker?.stop(), localReader?.stop()]));

/** A file whose every 500-line window is ~100 KB, beyond one observation's 64 KiB. */
function bigFile(ws: string): string {
  const file = path.join(ws, 'big.txt');
  fs.writeFileSync(file, Array.from({ length: 2000 }, (_, i) => `${i} ${'z'.repeat(195)}`).join('\n') + '\n');
  return file;
}

/** The same, in two-byte characters: a 64 KiB window is about 128 KB of JSON. */
function bigWideFile(ws: string): string {
  const file = path.join(ws, 'wide.txt');
  fs.writeFileSync(file, Array.from({ length: 2000 }, (_, i) => `${i} ${'é'.repeat(195)}`).join('\n') + '\n');
  return file;
}

function deepJson(depth: number): string {
  return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

async function largestEvent(settleClient: SettleClient, id: string): Promise<number> {
  const history = await settleClient.handle(id).fetchHistory();
  return Math.max(...(history.events ?? []).map((e) => JSON.stringify(e).length));
}

describe('history limits', () => {
  it('a model turn of 40 large reads, 1.5 MB and 10 MB arguments and 20,000-deep arguments: bounded, answered, completed', async () => {
    const ws = tempWorkspace('limits');
    const file = bigFile(ws);
    const reads = Array.from({ length: 40 }, (_, i) => ({
      id: `read_${i}`,
      name: 'file_view',
      arguments: JSON.stringify({ path: file, offset: 1 + (i % 4) * 500, limit: 500 }),
    }));
    const huge = (n: number) => JSON.stringify({ path: file, old_str: 'x'.repeat(n), new_str: 'y' });
    const server = await serve([
      { tool_calls: reads },
      {
        tool_calls: [
          { id: 'big_1', name: 'file_edit', arguments: huge(1_500_000) },
          { id: 'big_2', name: 'file_edit', arguments: huge(1_500_000) },
          { id: 'big_3', name: 'file_edit', arguments: huge(10_000_000) },
          { id: 'deep', name: 'spawn_subagent', arguments: deepJson(20_000) },
        ],
      },
      { content: 'done' },
    ]);
    try {
      const id = uniqueId('limits');
      await settle.start(id, { workspace: ws, model: { baseUrl: server.baseUrl, model: 'scripted', task: 'read a lot' } });
      const result = await settle.result(id);
      expect(result.outcome).toBe('completed');
      expect(result.finalAnswer).toBe('done');
      expect(result.calls.filter((c) => c.resolution === 'read')).toHaveLength(40);
      const invalid = result.calls.filter((c) => c.resolution === 'invalid');
      expect(invalid.map((c) => c.callId)).toEqual(['big_1', 'big_2', 'big_3', 'deep']);
      expect(invalid[0]!.observation!.error).toBe(
        `invalid call: args must be at most ${MAX_ARGS_CHARS} characters of JSON (got ${huge(1_500_000).length})`,
      );
      expect(invalid[3]!.observation!.error).toBe(
        `invalid call: args${'.a'.repeat(64)} must nest arrays and objects at most 64 levels deep`,
      );

      // The request after the 40 reads stayed bounded: the tool messages shared one budget.
      const second = server.requests[1]!.body as { messages: { role: string; content: string }[] };
      const toolChars = second.messages.filter((m) => m.role === 'tool').reduce((n, m) => n + m.content.length, 0);
      expect(toolChars).toBeLessThan(MAX_TURN_TOOL_MESSAGES_CHARS + 40 * 200);
      expect(JSON.stringify(second).length).toBeLessThan(1_000_000);
      // Every history event is far below Temporal's 2 MB payload limit.
      expect(await largestEvent(settle, id)).toBeLessThan(1_000_000);
    } finally {
      await server.close();
    }
  });

  it('a runTurn of 64 large reads answers within one payload, and the trajectory goes on', async () => {
    const ws = tempWorkspace('limits');
    const file = bigFile(ws);
    const id = uniqueId('limits');
    await settle.start(id, { workspace: ws });
    const calls = Array.from({ length: 64 }, (_, i) => ({
      call_id: `r${i}`,
      tool: 'file_view',
      args: { path: file, offset: 1 + (i % 4) * 500, limit: 500 },
    }));
    const { calls: answered } = await settle.runTurn(id, 0, calls);
    expect(answered).toHaveLength(64);
    expect(answered.every((c) => c.resolution === 'read' && c.observation!.truncated)).toBe(true);
    const observed = answered.reduce((n, c) => n + c.observation!.output.length, 0);
    expect(observed).toBeLessThanOrEqual(MAX_TURN_RESULT_CHARS);
    expect(observed).toBeGreaterThan(MAX_TURN_RESULT_CHARS / 2); // fitted, not emptied
    // The state and queries stay small: reports keep only the head of each observation.
    const status = await settle.status(id);
    expect(JSON.stringify(status.calls).length).toBeLessThan(64 * 5 * 1024);
    await settle.finish(id, 'completed', 'done');
    expect((await settle.result(id)).calls).toHaveLength(64);
    expect(await largestEvent(settle, id)).toBeLessThan(1_000_000);
  });

  it('a runTurn of 64 large reads in the local lane: its workflow task carries a bounded share, the rest are read as activities', async () => {
    // file_view moved to the local lane by the worker's operator: local results all return in the
    // one request completing their workflow task (capped by Temporal at 4 MB), and 64 windows of
    // 64 KiB, half of them in two-byte characters, are about 6 MB together.
    const ws = tempWorkspace('limits');
    const files = [bigFile(ws), bigWideFile(ws)];
    const id = uniqueId('limits');
    const local = new SettleClient(localReader.client, localReader.taskQueue);
    const { firstExecutionRunId } = await local.start(id, { workspace: ws });
    const calls = Array.from({ length: 64 }, (_, i) => ({
      call_id: `r${i}`,
      tool: 'file_view',
      args: { path: files[i % 2]!, offset: 1 + (Math.floor(i / 2) % 4) * 500, limit: 500 },
    }));
    const { calls: answered } = await local.runTurn(id, 0, calls);
    expect(answered).toHaveLength(64);
    expect(answered.every((c) => c.resolution === 'read' && c.observation!.truncated)).toBe(true);
    await local.finish(id, 'completed', 'done');

    // The turn's run (the trajectory may continue-as-new after it): its history holds every read's
    // result, more than a client receives by default, so it is read with a larger limit.
    const connection = await Connection.connect({
      address: inject('temporalAddress'),
      channelArgs: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
    });
    try {
      const events = (await new Client({ connection }).workflow.getHandle(id, firstExecutionRunId).fetchHistory()).events ?? [];
      const decode = (data: Uint8Array | null | undefined) => JSON.parse(Buffer.from(data!).toString('utf8')) as Record<string, unknown>;
      const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runReadOnlyTool').length;
      // The calls of a turn run one after another, so a workflow task runs reads locally until its
      // budget is spent (or the SDK heartbeats it): the local reads' markers follow the
      // WorkflowTaskCompleted of the task that carried them, grouped here by that task.
      const localReadsByTask: string[][] = [];
      for (const e of events) {
        if (e.workflowTaskCompletedEventAttributes) localReadsByTask.push([]);
        const marker = e.markerRecordedEventAttributes;
        if (marker?.markerName !== 'core_local_activity') continue;
        if (decode(marker.details!['data']!.payloads![0]!.data).activity_type !== 'runReadOnlyTool') continue;
        const result = marker.details!['result']?.payloads?.[0];
        localReadsByTask.at(-1)!.push(result ? (decode(result.data).kind as string) : 'failed');
      }
      const localReads = localReadsByTask.flat();
      const observedLocally = localReads.filter((k) => k === 'observed').length;
      // Some reads ran locally; no task carried more of them than its budget holds; a local read too
      // large for its room answered with its size only; every other read, and those, ran as activities.
      expect(localReads.length).toBeGreaterThanOrEqual(1);
      expect(Math.max(...localReadsByTask.map((t) => t.length))).toBeLessThanOrEqual(
        Math.floor(LOCAL_READ_BYTES_PER_TASK / LOCAL_READ_MAX_BYTES),
      );
      expect(localReads).toContain('too_large');
      expect(scheduled).toBe(64 - observedLocally);
      const patches = events.flatMap((e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_patch'
          ? [decode(e.markerRecordedEventAttributes.details!['patch-data']!.payloads![0]!.data).id]
          : [],
      );
      // Recorded where the budget sent a read to the activity lane (a starved host's heartbeated tasks may never fill it).
      if (localReadsByTask.some((t) => t.length === Math.floor(LOCAL_READ_BYTES_PER_TASK / LOCAL_READ_MAX_BYTES)))
        expect(patches).toContain(PATCH_LOCAL_READ_BUDGET);
    } finally {
      await connection.close();
    }
  });
});
