/**
 * An event is stamped when it is written, not when its transaction began. `now()` is the
 * transaction's start: a late completion whose statement began before a sweep's, then waited for
 * the sweep's row lock, was stamped COMPLETED a millisecond before the IN_DOUBT it follows. The
 * trail's order (its ids) was right; its times now agree with it. FROZEN once landed.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE settle_endpoint_events ALTER COLUMN at SET DEFAULT clock_timestamp()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE settle_endpoint_events ALTER COLUMN at SET DEFAULT now()`.execute(db);
}
