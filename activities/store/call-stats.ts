/**
 * Proposed tool calls and their validation outcome (migrations/0002), and the malformed-call
 * rate per tool computed from them: the measured p_err of source formula 1.
 *
 * Recording is idempotent: a proposal is named by (trajectory, turn, call id, seq) and a
 * second insert of the same name does nothing, so a retried activity or a re-delivered call
 * never counts twice. The first write wins, including its `at`.
 */
import { type Kysely, sql } from 'kysely';
import type { SettleDatabase } from './schema';

export interface ProposedCall {
  trajectoryId: string;
  turn: number;
  callId: string;
  /** Distinct proposals sharing one call id (e.g. a repair round re-using it); default 0. */
  seq?: number;
  /** The tool as proposed (possibly not one of ours). */
  tool: string;
  /** The first broken rule, as reported to the model; null when the call was valid. */
  issue: { field: string; rule: string } | null;
}

export interface ToolCallStats {
  tool: string;
  calls: number;
  malformed: number;
  /** malformed / calls. */
  rate: number;
}

export interface StatsOptions {
  /** Only calls recorded in the last `sinceMs` milliseconds (database clock); all when absent. */
  sinceMs?: number;
  /** Only this tool. */
  tool?: string;
}

export class CallStats {
  private readonly db: Kysely<SettleDatabase>;

  constructor(db: Kysely<SettleDatabase>) {
    this.db = db;
  }

  /** Records one proposed call. Returns false when it was already recorded (nothing changes). */
  async recordProposedCall(call: ProposedCall): Promise<boolean> {
    const result = await this.db
      .insertInto('settle_tool_calls')
      .values({
        trajectory_id: call.trajectoryId,
        turn: call.turn,
        call_id: call.callId,
        seq: call.seq ?? 0,
        tool: call.tool,
        valid: call.issue === null,
        field: call.issue?.field ?? null,
        rule: call.issue?.rule ?? null,
      })
      .onConflict((oc) => oc.columns(['trajectory_id', 'turn', 'call_id', 'seq']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  /** Per tool, by name: proposed calls, malformed ones, and the rate. */
  async stats(options: StatsOptions = {}): Promise<ToolCallStats[]> {
    let query = this.db
      .selectFrom('settle_tool_calls')
      .select((eb) => [
        'tool',
        sql<number>`count(*)::int`.as('calls'),
        sql<number>`(count(*) filter (where not ${eb.ref('valid')}))::int`.as('malformed'),
      ])
      .groupBy('tool')
      .orderBy('tool');
    if (options.sinceMs !== undefined) {
      if (!Number.isFinite(options.sinceMs) || options.sinceMs <= 0)
        throw new RangeError(`sinceMs must be a number > 0 (got ${options.sinceMs})`);
      query = query.where('at', '>=', sql<Date>`now() - make_interval(secs => ${options.sinceMs / 1000})`);
    }
    if (options.tool !== undefined) query = query.where('tool', '=', options.tool);
    const rows = await query.execute();
    return rows.map((r) => ({ tool: r.tool, calls: r.calls, malformed: r.malformed, rate: r.malformed / r.calls }));
  }
}
