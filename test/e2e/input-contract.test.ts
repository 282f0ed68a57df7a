/**
 * One input contract (core/trajectory-input.ts) at every entry: spec files, SettleClient.start,
 * the workflow's own check, runTurn updates and model-proposed calls. Limits that protect
 * history (argument size and depth, reserved call ids) refuse before anything enters history.
 * Real Temporal, real Postgres.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SettleClient } from '../../client/index';
import { MAX_JSON_DEPTH } from '../../core/json-limits';
import {
  MAX_ARGS_CHARS,
  MAX_TURN_ARGS_CHARS,
  TrajectoryInputSchema,
  TrajectoryRequestSchema,
  TrajectorySpecSchema,
} from '../../core/trajectory-input';
import { allIssues } from '../../core/validation';
import { runTurnUpdate, type ProposedCall } from '../../workflows/definitions';
import { startTestWorker, tempWorkspace, uniqueId, type RunningWorker } from '../support/env';

let worker: RunningWorker;
let settle: SettleClient;

beforeAll(async () => {
  worker = await startTestWorker();
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(() => worker?.stop());

/** An object nested `depth` levels deep, built without recursion. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

function firstIssue(schema: Parameters<typeof allIssues>[0], value: unknown, root: string): string | undefined {
  const issue = allIssues(schema, value, root)[0];
  return issue && `${issue.field} must ${issue.rule}`;
}

describe('the input contract', () => {
  const ws = '/nonexistent/settle-contract-ws'; // only validated, never touched

  it('spec, client request and workflow input apply the same rules and name the same field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ workspace: ws, leaseMs: 100 }, 'leaseMs must be at least 500 (got 100)'],
      [{ workspace: 'relative/dir' }, 'workspace must be an absolute path without NUL characters (got "relative/dir")'],
      [
        { workspace: ws, turns: [{ turn: 0, calls: [{ call_id: 'x'.repeat(256), tool: 'file_view', args: {} }] }] },
        'call_id must have at most 255 characters',
      ],
      [
        { workspace: ws, turns: [{ turn: 0, calls: [{ call_id: 'x#compensate', tool: 'file_edit', args: {} }] }] },
        'call_id must not end with #compensate',
      ],
      [{ workspace: ws, levelOverrides: { file_edit: 'A0' } }, 'levelOverrides.file_edit must not lower the level (A2 → A0)'],
      [{ workspace: ws, levelOverrides: { file_view: 'A3' } }, 'levelOverrides.file_view must not be raised: file_view is read-only'],
      [{ workspace: ws, levelOverrides: { rm_rf: 'A3' } }, 'levelOverrides.rm_rf must name a catalog tool'],
      [
        { workspace: ws, turns: [], model: { baseUrl: 'http://127.0.0.1:1/v1', model: 'm', task: 't' } },
        'model must not be given together with turns',
      ],
      [{ workspace: ws, model: { baseUrl: 'file:///etc/passwd', model: 'm', task: 't' } }, 'model.baseUrl must be a valid url'],
      [{ workspace: ws, backoff: { initialMs: 5000, maxMs: 100 } }, 'backoff.maxMs must be at least backoff.initialMs (5000)'],
      [{ workspace: ws, surprise: true }, 'contain only the declared fields; remove "surprise"'],
    ];
    for (const [input, message] of cases) {
      const request = firstIssue(TrajectoryRequestSchema(), input, 'input');
      const workflow = firstIssue(TrajectoryInputSchema(), input, 'input');
      const spec = firstIssue(TrajectorySpecSchema(), { trajectoryId: 't', ...input }, 'spec');
      expect(request, JSON.stringify(input)).toContain(message);
      expect(workflow).toBe(request);
      expect(spec).toBe(request!.replace(/^input/, 'spec'));
    }
    // Callers never set the continuation state; only the workflow accepts it.
    const carried = { workspace: ws, carried: { reports: [], turnsDone: [], continuedAsNew: 1 } };
    expect(firstIssue(TrajectoryRequestSchema(), carried, 'input')).toContain('remove "carried"');
    expect(firstIssue(TrajectoryInputSchema(), carried, 'input')).toBeUndefined();
  });

  it('bounds argument depth without recursing, and argument size per call and per turn', () => {
    const call = (args: Record<string, unknown>, id = 'c'): ProposedCall => ({ call_id: id, tool: 'file_edit', args });
    const turn = (...calls: ProposedCall[]) => ({ workspace: ws, turns: [{ turn: 0, calls }] });
    expect(firstIssue(TrajectoryRequestSchema(), turn(call(nested(MAX_JSON_DEPTH))), 'input')).toBeUndefined();
    expect(firstIssue(TrajectoryRequestSchema(), turn(call(nested(MAX_JSON_DEPTH + 1))), 'input')).toBe(
      `input.turns.0.calls.0.args must nest at most ${MAX_JSON_DEPTH} levels deep`,
    );
    expect(firstIssue(TrajectoryRequestSchema(), turn(call(nested(200_000))), 'input')).toContain('must nest at most');
    const big = 'x'.repeat(MAX_ARGS_CHARS);
    expect(firstIssue(TrajectoryRequestSchema(), turn(call({ s: big })), 'input')).toMatch(
      new RegExp(`args must be at most ${MAX_ARGS_CHARS} characters of JSON \\(got ${MAX_ARGS_CHARS + 8}\\)`),
    );
    const quarter = 'y'.repeat(MAX_TURN_ARGS_CHARS / 4);
    const five = [1, 2, 3, 4, 5].map((i) => call({ s: quarter.slice(0, MAX_ARGS_CHARS - 10) }, `c${i}`));
    expect(firstIssue(TrajectoryRequestSchema(), turn(...five), 'input')).toMatch(
      /calls must carry at most 524288 characters of arguments per turn/,
    );
  });
});

describe('the contract at the running system', () => {
  it('SettleClient.start refuses a broken input before anything starts; the workflow refuses it too', async () => {
    const id = uniqueId('contract');
    const input = { workspace: tempWorkspace('contract'), leaseMs: 100 };
    await expect(settle.start(id, input)).rejects.toThrow('input.leaseMs must be at least 500 (got 100)');
    await expect(settle.handle(id).describe()).rejects.toThrow(/not found/);
    await settle.client.workflow.start('trajectoryWorkflow', { taskQueue: settle.taskQueue, workflowId: id, args: [input] });
    await expect(settle.result(id)).rejects.toMatchObject({
      cause: { type: 'SettleInvalidInput', message: 'input.leaseMs must be at least 500 (got 100)' },
    });
  });

  it('runTurn refuses hostile turns before they enter history, and the trajectory goes on', async () => {
    const ws = tempWorkspace('contract');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'one\n');
    const id = uniqueId('contract');
    await settle.start(id, { workspace: ws });
    const refusals: [ProposedCall[], string][] = [
      [[{ call_id: 'deep', tool: 'file_edit', args: nested(20_000) }], `calls.0.args must nest at most ${MAX_JSON_DEPTH} levels deep`],
      [
        [{ call_id: 'big', tool: 'file_edit', args: { path: 'x', old_str: 'x'.repeat(1_500_000), new_str: '' } }],
        'calls.0.args must be at most',
      ],
      [[{ call_id: 'steal#compensate', tool: 'file_edit', args: {} }], 'calls.0.call_id must not end with #compensate'],
      [[{ call_id: 'c'.repeat(300), tool: 'file_view', args: {} }], 'calls.0.call_id must have at most 255 characters (got 300)'],
    ];
    for (const [calls, message] of refusals) {
      // The client refuses first; a caller that bypasses it meets the workflow's validator.
      await expect(settle.runTurn(id, 0, calls)).rejects.toThrow(message);
      if (calls[0]!.call_id === 'deep') continue; // too deep for the SDK to serialise at all
      await expect(settle.handle(id).executeUpdate(runTurnUpdate, { args: [{ turn: 0, calls }] })).rejects.toMatchObject({
        cause: { message: expect.stringContaining(message) },
      });
    }
    await expect(
      settle
        .handle(id)
        .executeUpdate(runTurnUpdate, { args: [{ turn: 0, calls: [{ call_id: 'd', tool: 'file_edit', args: nested(500) }] }] }),
    ).rejects.toMatchObject({ cause: { message: `calls.0.args must nest at most ${MAX_JSON_DEPTH} levels deep` } });
    const history = JSON.stringify(await settle.handle(id).fetchHistory());
    expect(history).not.toContain('steal#compensate');
    expect(history.length).toBeLessThan(100_000);

    const { calls } = await settle.runTurn(id, 0, [
      { call_id: 'ok', tool: 'file_edit', args: { path: path.join(ws, 'a.txt'), old_str: 'one', new_str: 'two' } },
    ]);
    expect(calls[0]).toMatchObject({ resolution: 'executed', state: 'COMPLETED' });
    await settle.finish(id, 'completed', 'done');
    expect((await settle.result(id)).outcome).toBe('completed');
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('two\n');
  });
});
