/** `file_view` arguments (source listing 5): a window of lines from a text file. */
import { z } from 'zod';
import { lazy } from '../lazy';
import { absolutePath } from './common';

export const FILE_VIEW = 'file_view';
export const MAX_VIEW_LINES = 500;

/** Built on first use (core/lazy.ts). */
export const fileViewArgs = lazy(() =>
  z
    .object({
      path: absolutePath('Absolute path to a text file inside the workspace.'),
      offset: z.number().int().min(1).max(10_000_000).describe('First line to return, 1-indexed (1 is the first line of the file).'),
      limit: z.number().int().min(1).max(MAX_VIEW_LINES).describe(`Maximum number of lines to return, 1 to ${MAX_VIEW_LINES}.`),
    })
    .strict()
    .describe(
      'Returns a window of lines from a text file, each prefixed with its 1-indexed line number, followed by the ' +
        "file's total line count. Lines longer than 2000 characters are cut with a marker. Read-only.",
    ),
);

export type FileViewArgs = z.output<ReturnType<typeof fileViewArgs>>;
