/**
 * The tool catalog as both sides see it: name → argument model and side-effect level
 * (DESIGN.md §4). Levels come from this registry only, never from a tool server's annotations.
 */
import type { z } from 'zod';
import { FILE_EDIT, FileEditArgs } from './file-edit';

/** A0 read-only · A1 idempotent · A2 reversible side effect · A3 destructive/irreversible. */
export type SideEffectLevel = 'A0' | 'A1' | 'A2' | 'A3';

export interface CatalogEntry {
  name: string;
  level: SideEffectLevel;
  args: z.ZodType;
}

export const CATALOG = {
  [FILE_EDIT]: { name: FILE_EDIT, level: 'A2', args: FileEditArgs },
} as const satisfies Record<string, CatalogEntry>;

export type ToolName = keyof typeof CATALOG;

export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(CATALOG, name);
}
