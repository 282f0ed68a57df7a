/**
 * Capability budgets (docs/design.md#budgets): what each token may spend, what it has spent, and what it
 * has reserved for its sub-agents; and one spend row per call key, so a retried call is never
 * charged twice and a crash never loses a charge. FROZEN once landed.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('settle_capability_budgets')
    .ifNotExists()
    .addColumn('digest', 'text', (c) => c.primaryKey().check(sql`digest ~ '^[0-9a-f]{64}$'`))
    .addColumn('audience', 'text', (c) => c.notNull())
    .addColumn('parent_digest', 'text')
    .addColumn('budget', 'bigint', (c) => c.notNull().check(sql`budget >= 0`))
    .addColumn('spent', 'bigint', (c) => c.notNull().defaultTo(0))
    // Carved out for open sub-agents; returned (minus their spend) when they end.
    .addColumn('reserved', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('closed', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('within_budget', sql`spent + reserved <= budget and spent >= 0 and reserved >= 0`)
    .execute();
  await db.schema
    .createTable('settle_capability_spends')
    .ifNotExists()
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('cost', 'bigint', (c) => c.notNull().check(sql`cost >= 0`))
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('settle_capability_spends').ifExists().execute();
  await db.schema.dropTable('settle_capability_budgets').ifExists().execute();
}
