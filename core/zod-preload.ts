/**
 * zod's first-use set-up, done during the workflow bundle's preload (workers/workflow-bundle.ts)
 * while its module state is still writable. zod 4.6 fills its global configuration (the English
 * locale, the memoizer) when it constructs its first schema; after the preload's deep freeze that
 * first construction fails ("Cannot add property localeError, object is not extensible"). One
 * throwaway schema, built and used on a valid and an invalid value here, runs every such
 * first-time step. Nothing is exported: the schema must not be reachable by the freeze.
 */
import { z } from 'zod';

const warm = z
  .object({ s: z.string().min(1).regex(/^x/), n: z.number().int(), e: z.enum(['a']), o: z.boolean().optional() })
  .strict()
  .superRefine(() => {});
warm.safeParse({ s: 'x', n: 1, e: 'a' });
warm.safeParse({ s: '', n: 1.5, e: 'b', extra: 1 });

export {};
