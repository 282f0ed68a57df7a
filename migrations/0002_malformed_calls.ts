/**
 * Proposed tool calls and their validation outcome, for malformed-call rates per tool (the
 * measured p_err that `settle breakeven` compares with the break-even rate). FROZEN once
 * landed: change the schema with a new migration, never by editing this one.
 *
 * One row per proposed call, valid or not, so a rate is one query over one table. The primary
 * key names the proposal — (trajectory, turn, call id, seq) — and writers insert with ON
 * CONFLICT DO NOTHING, so a retried activity or a re-delivered call is counted once.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('settle_tool_calls')
    .ifNotExists()
    .addColumn('trajectory_id', 'text', (c) => c.notNull())
    .addColumn('turn', 'integer', (c) => c.notNull().check(sql`turn >= 0`))
    .addColumn('call_id', 'text', (c) => c.notNull())
    // Tells apart distinct proposals that share a call id (e.g. a repair round re-using it);
    // 0 for the first. A re-delivery of the same proposal reuses its seq.
    .addColumn('seq', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`seq >= 0`),
    )
    // As proposed; may name no tool of ours (an unknown tool is itself a malformed call).
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('valid', 'boolean', (c) => c.notNull())
    // The first broken rule, as the observation reported it: `args.limit` / `be at most 500 (got 501)`.
    .addColumn('field', 'text')
    .addColumn('rule', 'text')
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('settle_tool_calls_pkey', ['trajectory_id', 'turn', 'call_id', 'seq'])
    // A malformed call names its field and rule; a valid one names neither.
    .addCheckConstraint(
      'malformed_names_field_and_rule',
      sql`(valid and field is null and rule is null) or (not valid and field is not null and rule is not null)`,
    )
    .execute();

  // `settle stats --since` reads a time window per tool.
  await db.schema.createIndex('settle_tool_calls_at_idx').ifNotExists().on('settle_tool_calls').columns(['at', 'tool']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('settle_tool_calls').ifExists().execute();
}
