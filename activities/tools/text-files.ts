/**
 * Reading text files for the read-only tools: UTF-8, bounded size, binary files recognised. Only
 * the regular file at the checked real path is read (checked-open.ts): never a FIFO or device,
 * never what a symlink swapped in after the check.
 */
import { openCheckedFile, PathChanged } from './checked-open';

export const MAX_TEXT_FILE_BYTES = 5 * 1024 * 1024;

export type TextFile =
  | { kind: 'text'; text: string }
  | { kind: 'binary' }
  | { kind: 'too_large'; bytes: number }
  | { kind: 'missing' }
  | { kind: 'not_a_file' }
  | { kind: 'changed'; reason: string };

/** Reads the regular file at `real`, a real path the workspace rules approved. */
export async function readTextFile(real: string): Promise<TextFile> {
  let file;
  try {
    file = await openCheckedFile(real);
  } catch (err) {
    if (err instanceof PathChanged) return { kind: 'changed', reason: err.message };
    throw err;
  }
  if (file.kind !== 'file') return file;
  try {
    if (file.size > MAX_TEXT_FILE_BYTES) return { kind: 'too_large', bytes: file.size };
    const bytes = await file.handle.readFile();
    if (bytes.length > MAX_TEXT_FILE_BYTES) return { kind: 'too_large', bytes: bytes.length };
    if (bytes.includes(0)) return { kind: 'binary' };
    return { kind: 'text', text: bytes.toString('utf8') };
  } finally {
    await file.handle.close();
  }
}

/** Lines without their terminators; a final newline does not start an extra line. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
