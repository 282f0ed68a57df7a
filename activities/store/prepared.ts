/**
 * Statements built with Kysely once and executed many times.
 *
 * Building a query with CTEs and compiling it to SQL costs more CPU than Postgres needs to run it,
 * and the endpoint store sits on every tool call. So each statement is built once, with
 * placeholder values standing in for its named parameters; executing it substitutes the real
 * values into the compiled parameter list. The SQL text is exactly what Kysely compiled.
 *
 * On a handle from openDatabase, it runs as a *named* prepared statement: each connection parses
 * and plans it once, later executions only bind and execute (the endpoint store's CTEs cost
 * Postgres more to parse and plan than to run), unless the handle's connections share server
 * sessions (a transaction-mode pooler: useUnnamedStatements). Elsewhere it runs through Kysely.
 */
import crypto from 'node:crypto';
import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import { directAccessOf } from './database';

type ParamValue = string | number | null;

export class PreparedStatement<P extends Record<string, ParamValue>, R> {
  private readonly compiled: CompiledQuery<R>;
  /** For each compiled parameter: the name it stands for, or undefined for a constant. */
  private readonly slots: (keyof P | undefined)[];
  /** The server-side statement name: derived from the SQL, so a name always means one text. */
  private readonly name: string;

  constructor(build: (params: P) => Compilable<R>, names: readonly (keyof P & string)[]) {
    const placeholders = Object.fromEntries(names.map((n) => [n, placeholder(n)])) as unknown as P;
    this.compiled = build(placeholders).compile();
    const byPlaceholder = new Map<unknown, keyof P>(names.map((n) => [placeholder(n), n]));
    this.slots = this.compiled.parameters.map((p) => byPlaceholder.get(p));
    for (const n of names) {
      if (!this.slots.includes(n)) throw new Error(`prepared statement: parameter ${n} is not used by the query`);
    }
    this.name = `settle_${crypto.createHash('sha256').update(this.compiled.sql).digest('hex').slice(0, 24)}`;
  }

  /** The SQL text as compiled (what the server sees, before pg_stat_statements normalises its literals). */
  get sql(): string {
    return this.compiled.sql;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- compiled SQL runs on any handle of the same database
  async execute(db: Kysely<any>, params: P): Promise<QueryResult<R>> {
    const parameters = this.compiled.parameters.map((constant, i) => {
      const name = this.slots[i];
      return name === undefined ? constant : params[name];
    });
    const direct = directAccessOf(db);
    if (!direct) return db.executeQuery<R>({ ...this.compiled, parameters });
    direct.log?.(this.compiled.sql);
    const result = await direct.pool.query({
      ...(direct.namedStatements ? { name: this.name } : {}),
      text: this.compiled.sql,
      values: parameters,
    });
    return { rows: result.rows as R[] };
  }
}

function placeholder(name: string): string {
  return `\u0000settle-param:${name}\u0000`;
}
