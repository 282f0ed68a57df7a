/** Turns a zod failure into the first offending field and the rule it broke. */
import type { z } from 'zod';
import { InputError } from './errors';

export function parseArgs<S extends z.ZodType>(schema: S, value: unknown, root = 'args'): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = [root, ...issue.path.map(String)].join('.');
  throw new InputError(where, issue.message);
}
