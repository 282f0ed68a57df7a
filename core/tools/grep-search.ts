/** `grep_search` arguments (source listing 5): structured regular-expression search. */
import { z } from 'zod';
import { lazy } from '../lazy';
import { absolutePath } from './common';

export const GREP_SEARCH = 'grep_search';

/** Built on first use (core/lazy.ts). */
export const grepSearchArgs = lazy(() =>
  z
    .object({
      pattern: z
        .string()
        .min(1)
        .max(512)
        .describe('JavaScript regular expression matched against each line (no flags; use (?i) style alternatives explicitly).'),
      path: absolutePath('Absolute path of a directory (searched recursively) or a file, inside the workspace.'),
      glob: z
        .string()
        .min(1)
        .max(128)
        .regex(/^[a-zA-Z0-9_.*?{},[\]-]+$/)
        .optional()
        .describe("Optional file-name filter such as '*.ts' or '*.{ts,tsx}', matched against the file's base name. Absent: all files."),
      max_results: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .default(100)
        .describe('Maximum number of matching lines to return, 1 to 1000 (default 100 when absent).'),
    })
    .strict()
    .describe(
      'Searches text files for a regular expression and returns structured matches: the path, the 1-indexed line ' +
        'number and the line text (cut to 500 characters). Binary files and files over 5 MiB are skipped. A search ' +
        'running longer than 10 seconds (e.g. a catastrophic pattern) ends with an error. Read-only.',
    ),
);

export type GrepSearchArgs = z.output<ReturnType<typeof grepSearchArgs>>;
