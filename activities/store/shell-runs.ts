/**
 * The start ledger of shell executions (migrations/0004, docs/design.md#shell-run-markers): a row
 * per (key, generation), `started` by its executor before the spawn or `fenced` by a probe. It
 * lives in the worker's database, which no sandbox can reach, so no command can remove the
 * evidence that an execution started.
 */
import { type Kysely, sql } from 'kysely';
import type { CallGeneration, RunEntry, RunLedger } from '../settled/settled-tool';
import type { SettleDatabase } from './schema';
import { PreparedStatement } from './prepared';

const RUNS = 'settle_shell_runs' as const;

interface StartParams extends Record<string, string | number | null> {
  key: string;
  generation: number;
  /** JSON text. */
  by: string;
  seal_key: string;
}

/** The executor's statement, on every shell call: prepared once. */
function startStatement(db: Kysely<SettleDatabase>) {
  return new PreparedStatement(
    (p: StartParams) =>
      db
        .insertInto(RUNS)
        .values({ key: p.key, generation: p.generation, kind: 'started', by: sql`${p.by}::jsonb`, seal_key: p.seal_key })
        .onConflict((oc) => oc.columns(['key', 'generation']).doNothing())
        .returning('kind'),
    ['key', 'generation', 'by', 'seal_key'],
  );
}

export class ShellRunStore implements RunLedger {
  private readonly starting: ReturnType<typeof startStatement>;

  constructor(private readonly db: Kysely<SettleDatabase>) {
    this.starting = startStatement(db);
  }

  async start(at: CallGeneration, by: unknown, sealKey: string): Promise<boolean> {
    const { rows } = await this.starting.execute(this.db, {
      key: at.key,
      generation: at.generation,
      by: JSON.stringify(by),
      seal_key: sealKey,
    });
    return rows.length === 1;
  }

  async fence(at: CallGeneration, by: unknown): Promise<RunEntry> {
    const fenced = await this.db
      .insertInto(RUNS)
      .values({ key: at.key, generation: at.generation, kind: 'fenced', by: JSON.stringify(by) })
      .onConflict((oc) => oc.columns(['key', 'generation']).doNothing())
      .returning('by')
      .executeTakeFirst();
    if (fenced) return { kind: 'fenced', by: fenced.by, fencedNow: true };
    // The row that won (a new statement: its snapshot sees a row committed while the insert waited).
    const row = await this.db
      .selectFrom(RUNS)
      .select(['kind', 'by', 'seal_key'])
      .where('key', '=', at.key)
      .where('generation', '=', at.generation)
      .executeTakeFirstOrThrow();
    return row.kind === 'started'
      ? { kind: 'started', by: row.by, sealKey: row.seal_key!, fencedNow: false }
      : { kind: 'fenced', by: row.by, fencedNow: false };
  }
}
