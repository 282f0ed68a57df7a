/**
 * Operator settlements counted where every path writes them: the record store. A verdict given
 * through a worker is counted by that worker (settle_operator_verdicts_total), but `settle
 * resolve` and the console write a verdict directly on the record when no trajectory waits for
 * it, and no worker sees that. A trigger on the event trail counts each operator's settlement of
 * an IN_DOUBT record, by the state it left, in a table retention never purges: the exporter
 * reports it as a counter (settle_operator_settlements_total) that only grows.
 * FROZEN once landed.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('settle_operator_settlement_counts')
    .ifNotExists()
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('settlements', 'bigint', (c) => c.notNull())
    .execute();
  // A refused write leaves an event too, with from_state = to_state: only transitions count.
  await sql`
    CREATE OR REPLACE FUNCTION settle_count_operator_settlement() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO settle_operator_settlement_counts (state, settlements) VALUES (NEW.to_state, 1)
        ON CONFLICT (state) DO UPDATE SET settlements = settle_operator_settlement_counts.settlements + 1;
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER settle_operator_settlement_count AFTER INSERT ON settle_endpoint_events
    FOR EACH ROW WHEN (NEW.from_state = 'IN_DOUBT' AND NEW.to_state IN ('COMPLETED', 'NOT_EXECUTED') AND NEW.actor LIKE 'operator:%')
    EXECUTE FUNCTION settle_count_operator_settlement()`.execute(db);
  // The settlements already in the trail (retention may have purged older ones: those are lost).
  await sql`
    INSERT INTO settle_operator_settlement_counts (state, settlements)
    SELECT to_state, count(*) FROM settle_endpoint_events
    WHERE from_state = 'IN_DOUBT' AND to_state IN ('COMPLETED', 'NOT_EXECUTED') AND actor LIKE 'operator:%'
    GROUP BY to_state`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS settle_operator_settlement_count ON settle_endpoint_events`.execute(db);
  await sql`DROP FUNCTION IF EXISTS settle_count_operator_settlement()`.execute(db);
  await db.schema.dropTable('settle_operator_settlement_counts').ifExists().execute();
}
