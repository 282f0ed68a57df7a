/** Proposed-call recording and per-tool malformed rates against the real Postgres. */
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { CallStats } from '../../activities/store/call-stats';
import { openTestDb, uniqueId } from '../support/env';

const db = openTestDb(4);
const stats = new CallStats(db);
afterAll(() => db.destroy());

const issue = { field: 'args.limit', rule: 'be at most 500 (got 501)' };

describe('CallStats', () => {
  it('counts calls and malformed calls per tool, with the rate', async () => {
    const trajectoryId = uniqueId('stats');
    const [viewer, editor] = [uniqueId('viewer'), uniqueId('editor')];
    for (let i = 0; i < 4; i++) {
      await stats.recordProposedCall({ trajectoryId, turn: i, callId: 'c', tool: viewer, issue: i === 0 ? issue : null });
    }
    await stats.recordProposedCall({ trajectoryId, turn: 0, callId: 'd', tool: editor, issue: null });
    const rows = (await stats.stats()).filter((r) => r.tool === viewer || r.tool === editor);
    // By tool name: "editor-…" before "viewer-…".
    expect(rows).toEqual([
      { tool: editor, calls: 1, malformed: 0, rate: 0 },
      { tool: viewer, calls: 4, malformed: 1, rate: 0.25 },
    ]);
    expect(await stats.stats({ tool: viewer })).toEqual([{ tool: viewer, calls: 4, malformed: 1, rate: 0.25 }]);
  });

  it('records a proposal once: a retried activity or a re-delivered call does not double-count', async () => {
    const trajectoryId = uniqueId('retry');
    const tool = uniqueId('tool');
    const call = { trajectoryId, turn: 3, callId: 'call_1', tool, issue };
    expect(await stats.recordProposedCall(call)).toBe(true);
    expect(await stats.recordProposedCall(call)).toBe(false);
    // Concurrent retries, as two activity attempts racing.
    const again = await Promise.all(Array.from({ length: 8 }, () => stats.recordProposedCall(call)));
    expect(again.filter(Boolean)).toHaveLength(0);
    // A repair round that re-uses the call id is a new proposal when it says so (seq).
    expect(await stats.recordProposedCall({ ...call, seq: 1, issue: null })).toBe(true);
    expect(await stats.stats({ tool })).toEqual([{ tool, calls: 2, malformed: 1, rate: 0.5 }]);
    const row = await db
      .selectFrom('settle_tool_calls')
      .select(['seq', 'valid', 'field', 'rule'])
      .where('trajectory_id', '=', trajectoryId)
      .orderBy('seq')
      .execute();
    expect(row).toEqual([
      { seq: 0, valid: false, field: 'args.limit', rule: 'be at most 500 (got 501)' },
      { seq: 1, valid: true, field: null, rule: null },
    ]);
  });

  it('counts only calls inside the --since window (database clock)', async () => {
    const trajectoryId = uniqueId('window');
    const tool = uniqueId('tool');
    for (let turn = 0; turn < 3; turn++)
      await stats.recordProposedCall({ trajectoryId, turn, callId: 'c', tool, issue: turn < 2 ? issue : null });
    // Age two of them: one by two hours, one by two days.
    await sql`update settle_tool_calls set at = now() - interval '2 hours' where trajectory_id = ${trajectoryId} and turn = 0`.execute(db);
    await sql`update settle_tool_calls set at = now() - interval '2 days' where trajectory_id = ${trajectoryId} and turn = 1`.execute(db);
    expect(await stats.stats({ tool })).toEqual([{ tool, calls: 3, malformed: 2, rate: 2 / 3 }]);
    expect(await stats.stats({ tool, sinceMs: 86_400_000 })).toEqual([{ tool, calls: 2, malformed: 1, rate: 0.5 }]);
    expect(await stats.stats({ tool, sinceMs: 3_600_000 })).toEqual([{ tool, calls: 1, malformed: 0, rate: 0 }]);
  });

  it('refuses a malformed row without its field and rule (the table says why a call failed)', async () => {
    await expect(
      sql`insert into settle_tool_calls (trajectory_id, turn, call_id, tool, valid) values (${uniqueId('bad')}, 0, 'c', 't', false)`.execute(
        db,
      ),
    ).rejects.toThrow(/malformed_names_field_and_rule/);
  });
});
