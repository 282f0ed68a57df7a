/**
 * Endpoint records and their audit trail (docs/design.md#endpoint-records). FROZEN once landed: change the schema
 * with a new migration, never by editing this one.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('settle_endpoint_records')
    .ifNotExists()
    .addColumn('key', 'text', (c) => c.primaryKey().check(sql`key ~ '^[0-9a-f]{64}$'`))
    .addColumn('trajectory_id', 'text', (c) => c.notNull())
    .addColumn('turn', 'integer', (c) => c.notNull().check(sql`turn >= 0`))
    .addColumn('call_id', 'text', (c) => c.notNull())
    .addColumn('tool', 'text', (c) => c.notNull())
    .addColumn('args', 'jsonb', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('IN_FLIGHT', 'COMPLETED', 'IN_DOUBT', 'NOT_EXECUTED')`))
    // Fencing token: incremented by every new claim of the key.
    .addColumn('generation', 'integer', (c) => c.notNull().check(sql`generation >= 1`))
    // Database clock only; NULL unless IN_FLIGHT.
    .addColumn('lease_until', 'timestamptz')
    .addColumn('holder', 'text')
    .addColumn('intent', 'jsonb')
    .addColumn('result', 'jsonb')
    .addColumn('detail', 'text')
    .addColumn('settled_by', 'text')
    .addColumn('settle_reason', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('in_flight_has_lease', sql`(state = 'IN_FLIGHT') = (lease_until is not null)`)
    .addCheckConstraint('completed_has_result', sql`state <> 'COMPLETED' or result is not null`)
    .execute();

  await db.schema
    .createIndex('settle_endpoint_records_trajectory_idx')
    .ifNotExists()
    .on('settle_endpoint_records')
    .columns(['trajectory_id', 'turn'])
    .execute();
  await db.schema
    .createIndex('settle_endpoint_records_state_idx')
    .ifNotExists()
    .on('settle_endpoint_records')
    .columns(['state', 'updated_at'])
    .execute();

  await db.schema
    .createTable('settle_endpoint_events')
    .ifNotExists()
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    // No foreign key: an event may record a refused write for a key whose record was purged,
    // and retention deletes a record's events explicitly in the same statement.
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('from_state', 'text', (c) => c.notNull())
    .addColumn('to_state', 'text', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('detail', 'jsonb')
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('settle_endpoint_events_key_idx').ifNotExists().on('settle_endpoint_events').columns(['key', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('settle_endpoint_events').ifExists().execute();
  await db.schema.dropTable('settle_endpoint_records').ifExists().execute();
}
