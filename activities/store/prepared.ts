/**
 * Statements built with Kysely once and executed many times.
 *
 * Building a query with CTEs and compiling it to SQL costs more CPU than Postgres needs to run it,
 * and the endpoint store sits on every tool call. So each statement is built once, with
 * placeholder values standing in for its named parameters; executing it substitutes the real
 * values into the compiled parameter list. The SQL text is exactly what Kysely compiled.
 */
import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';

type ParamValue = string | number | null;

export class PreparedStatement<P extends Record<string, ParamValue>, R> {
  private readonly compiled: CompiledQuery<R>;
  /** For each compiled parameter: the name it stands for, or undefined for a constant. */
  private readonly slots: (keyof P | undefined)[];

  constructor(build: (params: P) => Compilable<R>, names: readonly (keyof P & string)[]) {
    const placeholders = Object.fromEntries(names.map((n) => [n, placeholder(n)])) as unknown as P;
    this.compiled = build(placeholders).compile();
    const byPlaceholder = new Map<unknown, keyof P>(names.map((n) => [placeholder(n), n]));
    this.slots = this.compiled.parameters.map((p) => byPlaceholder.get(p));
    for (const n of names) {
      if (!this.slots.includes(n)) throw new Error(`prepared statement: parameter ${n} is not used by the query`);
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- compiled SQL runs on any handle of the same database
  async execute(db: Kysely<any>, params: P): Promise<QueryResult<R>> {
    const parameters = this.compiled.parameters.map((constant, i) => {
      const name = this.slots[i];
      return name === undefined ? constant : params[name];
    });
    return db.executeQuery<R>({ ...this.compiled, parameters });
  }
}

function placeholder(name: string): string {
  return `\u0000settle-param:${name}\u0000`;
}
