/** Argument pieces shared by the catalog's tools. */
import { z } from 'zod';

/** An absolute path of plain segments (listing 1's pattern); containment is checked at access time. */
export const absolutePath = (description: string) =>
  z
    .string()
    .max(1024)
    .regex(
      /^\/([a-zA-Z0-9_.-]+\/)*[a-zA-Z0-9_.-]+$/,
      'be an absolute path of names made of letters, digits, ".", "_" and "-" (e.g. /work/src/app.ts)',
    )
    .describe(description);
