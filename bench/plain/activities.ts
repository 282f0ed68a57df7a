/**
 * The baselines' activities: the same atomic edit as settle's `file_edit` (the same plan —
 * resolve inside the workspace, exactly one match — and the same execute: temporary file, fsync,
 * rename), once with no record at all (`plainFileEdit`), once bracketed by the simplest durable
 * idempotency record a team would write by hand (`recordedFileEdit`).
 */
import { Context } from '@temporalio/activity';
import pg from 'pg';
import { fileEdit } from '../../activities/tools/file-edit';

/** One edit as the baselines' workflows send it: settle's `file_edit` arguments. */
export interface PlainEdit {
  path: string;
  old_str: string;
  new_str: string;
}

async function edit(input: { workspace: string; edit: PlainEdit }): Promise<string> {
  const env = { workspace: input.workspace };
  const args = { ...input.edit, allow_multiple: false };
  const plan = await fileEdit.plan(args, env);
  if (plan.kind === 'answer') return plan.result.error ?? plan.result.output;
  const result = await fileEdit.execute(args, plan.intent, env, { key: 'plain', generation: 1, assertLeaseHeld: () => {} });
  return result.output;
}

/**
 * The hand-rolled record: one row per call, inserted (its own commit, before the effect) and
 * updated with the result (its own commit, after it); a retry that finds the row completed returns
 * the stored result. No lease, no fencing, no probe, no audit trail, no capability: only the two
 * durable commits any design that records intent before an effect and its result after must pay.
 */
const RECORDS_DDL = `create table if not exists plain_bench_records (
  key text primary key, state text not null, result text, updated_at timestamptz not null default now())`;
let records: Promise<pg.Pool> | undefined;

/** The pool, once the table exists (created on first use: the baseline has no migrations). */
function database(): Promise<pg.Pool> {
  return (records ??= (async () => {
    const connectionString = process.env.DATABASE_URL;
    if (!connectionString) throw new Error('recordedFileEdit needs DATABASE_URL');
    const pool = new pg.Pool({ connectionString, max: 10 });
    await pool.query(RECORDS_DDL);
    return pool;
  })());
}

/** Ends the hand-rolled record's pool, if a call opened it (an in-process benchmark, before its database stops). */
export async function closeRecordPool(): Promise<void> {
  const pool = records;
  records = undefined;
  if (pool) await (await pool).end();
}

export const plainActivities = {
  async plainFileEdit(input: { workspace: string; edit: PlainEdit }): Promise<string> {
    return edit(input);
  },

  async recordedFileEdit(input: { workspace: string; edit: PlainEdit }): Promise<string> {
    const pool = await database();
    const info = Context.current().info;
    const key = `${info.workflowExecution?.workflowId ?? info.activityId}:${info.activityId}`;
    const claimed = await pool.query<{ state: string; result: string | null; inserted: boolean }>({
      name: 'plain-bench-claim',
      text: `insert into plain_bench_records (key, state) values ($1, 'IN_FLIGHT')
             on conflict (key) do update set updated_at = plain_bench_records.updated_at
             returning state, result, (xmax = 0) as inserted`,
      values: [key],
    });
    const row = claimed.rows[0]!;
    if (!row.inserted) {
      if (row.state === 'COMPLETED') return row.result!;
      throw new Error(`call ${key} is ${row.state}: its effect is unknown`);
    }
    const output = await edit(input);
    await pool.query({
      name: 'plain-bench-complete',
      text: `update plain_bench_records set state = 'COMPLETED', result = $2, updated_at = now() where key = $1`,
      values: [key, output],
    });
    return output;
  },
};

export type PlainActivities = typeof plainActivities;
