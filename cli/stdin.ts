/**
 * Reading stdin whole. Not `fs.readFileSync(0)`: when stdin is a non-blocking pipe (as Node's
 * child_process and some shells hand it over) and the reader catches up with the writer, that read
 * fails with EAGAIN, so a large input piped in would be refused or not depending on timing.
 */
import fs from 'node:fs';

export async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The bytes of `file`, or of stdin for `-`. */
export async function readFileOrStdin(file: string): Promise<Buffer> {
  return file === '-' ? readStdin() : fs.readFileSync(file);
}
