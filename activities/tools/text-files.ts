/** Reading text files for the read-only tools: UTF-8, bounded size, binary files recognised. */
import fs from 'node:fs/promises';

export const MAX_TEXT_FILE_BYTES = 5 * 1024 * 1024;

export type TextFile =
  { kind: 'text'; text: string } | { kind: 'binary' } | { kind: 'too_large'; bytes: number } | { kind: 'missing' } | { kind: 'not_a_file' };

export async function readTextFile(p: string): Promise<TextFile> {
  let stat;
  try {
    stat = await fs.stat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    throw err;
  }
  if (!stat.isFile()) return { kind: 'not_a_file' };
  if (stat.size > MAX_TEXT_FILE_BYTES) return { kind: 'too_large', bytes: stat.size };
  const bytes = await fs.readFile(p);
  if (bytes.includes(0)) return { kind: 'binary' };
  return { kind: 'text', text: bytes.toString('utf8') };
}

/**
 * The size of `p` when it is a file larger than the file tools handle, else null (missing files
 * and directories are for the caller to report). Checked before reading, so a huge file is never
 * loaded into the worker's memory.
 */
export async function sizeOverLimit(p: string): Promise<number | null> {
  const stat = await fs.stat(p).catch(() => null);
  return stat && stat.size > MAX_TEXT_FILE_BYTES ? stat.size : null;
}

/** Lines without their terminators; a final newline does not start an extra line. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
