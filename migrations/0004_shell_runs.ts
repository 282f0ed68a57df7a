/**
 * The start of each shell execution, recorded where no sandbox can reach it
 * (docs/design.md#shell-run-markers). FROZEN once landed.
 *
 * One row per (key, generation) of `bash_execute`: `started`, committed by the executor before it
 * spawns the command, or `fenced`, inserted by a probe that found none. The primary key makes the
 * two race safely: whoever inserts first wins, and the other finds the winner's row.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('settle_shell_runs')
    .ifNotExists()
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull().check(sql`generation >= 1`))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('started', 'fenced')`))
    // The process that wrote the row: pid, start time, boot id and host (for "is its worker alive?").
    .addColumn('by', 'jsonb', (c) => c.notNull())
    // `started` only: the key that seals this execution's exit marker, so a forged marker is told apart.
    .addColumn('seal_key', 'text')
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('settle_shell_runs_pkey', ['key', 'generation'])
    .addCheckConstraint('started_has_seal_key', sql`(kind = 'started') = (seal_key is not null)`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('settle_shell_runs').ifExists().execute();
}
