/**
 * Validation errors phrased for people and models: the first offending field and the rule it
 * broke ("args.limit must be at most 500 (got 501)"), never a library's raw message.
 */
import type { z } from 'zod';
import { InputError } from './errors';

export function parseArgs<S extends z.ZodType>(schema: S, value: unknown, root = 'args'): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = [root, ...issue.path.map(String)].filter(Boolean).join('.') || root;
  throw new InputError(where, ruleOf(issue, valueAt(value, issue.path)));
}

/** Everything a validator reports, for counting (one entry per broken rule). */
export function allIssues(schema: z.ZodType, value: unknown, root = 'args'): { field: string; rule: string }[] {
  const parsed = schema.safeParse(value);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => ({
    field: [root, ...issue.path.map(String)].filter(Boolean).join('.') || root,
    rule: ruleOf(issue, valueAt(value, issue.path)),
  }));
}

type Issue = z.core.$ZodIssue;

function ruleOf(issue: Issue, got: unknown): string {
  const shown = describe(got);
  switch (issue.code) {
    case 'invalid_type':
      if (got === undefined) return `be present (required, ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`})`;
      return `be ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`} (got ${shown})`;
    case 'too_big':
      return issue.origin === 'string'
        ? `have at most ${issue.maximum} characters (got ${(got as string).length})`
        : issue.origin === 'array'
          ? `have at most ${issue.maximum} items (got ${(got as unknown[]).length})`
          : `be ${issue.inclusive === false ? 'less than' : 'at most'} ${issue.maximum} (got ${shown})`;
    case 'too_small':
      return issue.origin === 'string'
        ? `have at least ${issue.minimum} character${issue.minimum === 1 ? '' : 's'} (got ${(got as string).length})`
        : issue.origin === 'array'
          ? `have at least ${issue.minimum} items`
          : // .positive() is "greater than 0": an exclusive bound said as "at least 0" would invite a 0.
            `be ${issue.inclusive === false ? 'greater than' : 'at least'} ${issue.minimum} (got ${shown})`;
    case 'invalid_format':
      // A schema's own message says what a valid value looks like; a bare regex is the last resort.
      return issue.format === 'regex'
        ? issue.message && !issue.message.startsWith('Invalid string')
          ? `${issue.message} (got ${shown})`
          : `match the pattern ${(issue as { pattern?: string }).pattern} (got ${shown})`
        : `be a valid ${issue.format}`;
    case 'unrecognized_keys':
      return `contain only the declared fields; remove ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    case 'invalid_value':
      return `be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')} (got ${shown})`;
    case 'invalid_union':
      return 'match one of the declared variants (check its discriminator field)';
    default:
      return issue.message;
  }
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : typeof v;
}
