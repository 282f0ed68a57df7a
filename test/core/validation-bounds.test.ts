/** Bounds as core/validation.ts tells them to a model: an exclusive bound is never said as an inclusive one. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseArgs } from '../../core/validation';

describe('number bounds in validation errors', () => {
  it.each([
    [z.object({ n: z.number().positive() }), { n: 0 }, 'args.n must be greater than 0 (got 0)'],
    [z.object({ n: z.number().gt(2) }), { n: 2 }, 'args.n must be greater than 2 (got 2)'],
    [z.object({ n: z.number().negative() }), { n: 0 }, 'args.n must be less than 0 (got 0)'],
    [z.object({ n: z.number().lt(10) }), { n: 10 }, 'args.n must be less than 10 (got 10)'],
    [z.object({ n: z.number().nonnegative() }), { n: -1 }, 'args.n must be at least 0 (got -1)'],
    [z.object({ n: z.number().max(5) }), { n: 6 }, 'args.n must be at most 5 (got 6)'],
  ])('%#: %j', (schema, value, message) => {
    expect(() => parseArgs(schema, value)).toThrow(message);
  });
});
