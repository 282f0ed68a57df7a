/**
 * The host whose disk holds a workspace call's evidence (docs/deploying.md#workers-on-several-hosts).
 * FROZEN once landed.
 *
 * Set by each claim that takes the key IN_FLIGHT, for a tool whose effect lives in a workspace
 * (file and shell tools); null for any other tool, and for records claimed before this column.
 * A probe on another host answers unknown; a claim from another host never re-runs the call.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('settle_endpoint_records').addColumn('host', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('settle_endpoint_records').dropColumn('host').execute();
}
