/**
 * `file_edit` arguments (source listing 1): exact replacement of one block, or of every block
 * with `allow_multiple`. The zod model is the single definition: the published JSON Schema is
 * generated from it, and the runtime validates with it.
 */
import { z } from 'zod';
import { lazy } from '../lazy';
import { absolutePath } from './common';

export const FILE_EDIT = 'file_edit';

/** Built on first use (core/lazy.ts). */
export const fileEditArgs = lazy(() =>
  z
    .object({
      path: absolutePath('Absolute path to the target file, inside the workspace root.'),
      old_str: z.string().min(1).max(65536).describe('The exact block to replace, including indentation and newlines.'),
      new_str: z.string().max(65536).describe('The replacement text. May be empty to delete old_str.'),
      allow_multiple: z
        .boolean()
        .default(false)
        .describe('If true, replace every match; if false (the default when absent), fail unless exactly one match exists.'),
    })
    .strict()
    .describe(
      'Replaces an exact block of text in an existing file. old_str must match exactly one contiguous block unless ' +
        'allow_multiple is true; if it matches zero blocks, or more than one when allow_multiple is false, the file is ' +
        'left unchanged and the call returns an error naming the match count.',
    ),
);

export type FileEditArgs = z.output<ReturnType<typeof fileEditArgs>>;

/** Facts recorded before the effect, so a probe can decide later (docs/design.md#intent-before-effect). */
export interface FileEditIntent {
  path: string;
  sha256_before: string;
  sha256_after: string;
  matches: number;
  /**
   * The temporary file the edit is prepared in, renamed over `path` as the effect. A probe
   * removes it before deciding "not applied", so a paused executor can never rename it
   * afterwards. Absent in intents recorded before it existed.
   */
  tmp_path?: string;
}
