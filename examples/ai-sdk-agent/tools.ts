/**
 * The agent's own tool (worker side; the workflow imports it as a type only):
 *   edit_file  A2 — replaces text in a file of the notes directory; its probe reads the file.
 * Its HTTP calls are settle's built-in http_request (A1: settle's key goes downstream as
 * `Idempotency-Key`), reaching only the hosts the workflow's capability grants.
 * The worker's environment names the notes directory: NOTES_DIR (never the model's arguments).
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { defineTool, NoEffect } from '../../api/worker';

const notesDir = () => process.env.NOTES_DIR ?? path.resolve('notes');

/** A2: one text replacement in a note; applied once, even when the worker dies mid-way. */
export const editFile = defineTool({
  name: 'edit_file',
  description: 'Replaces the one occurrence of a text in a note file with another text.',
  args: z.strictObject({
    file: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}\.txt$/)
      .describe('The note file name, e.g. plan.txt (lower-case letters, digits, _ or -, then .txt)'),
    find: z.string().min(1).max(2000).describe('The exact text to replace; must occur exactly once'),
    replace: z.string().max(2000).describe('The text to put in its place'),
  }),
  level: 'A2',
  // What a capability must grant: writing that note (the workflow's capability names the notes directory).
  access: (args) => ({ right: 'write', target: { kind: 'path', path: path.join(notesDir(), args.file) } }),
  execute: async (args, { assertLeaseHeld }) => {
    const file = path.join(notesDir(), args.file);
    const text = fs.readFileSync(file, 'utf8');
    const at = text.indexOf(args.find);
    if (at < 0 || text.indexOf(args.find, at + 1) >= 0) {
      throw new NoEffect(`${args.file} must contain the text to find exactly once`);
    }
    assertLeaseHeld(); // right before the effect
    fs.writeFileSync(file, text.slice(0, at) + args.replace + text.slice(at + args.find.length));
    return { file: args.file, replaced: args.find.length, with: args.replace.length };
  },
  probe: async (_args, intent) => {
    const text = fs.readFileSync(path.join(notesDir(), intent.file), 'utf8');
    if (text.includes(intent.find)) return { verdict: 'not_applied', detail: 'the text to find is still in the file' };
    if (text.includes(intent.replace)) {
      return {
        verdict: 'applied',
        result: { file: intent.file, replaced: intent.find.length, with: intent.replace.length },
        detail: 'the replacement is in the file',
      };
    }
    return { verdict: 'unknown', detail: 'neither the old nor the new text is in the file' };
  },
});

export const agentTools = [editFile] as const;
