/**
 * The agent's tools (worker side; the workflow imports them as types only):
 *   edit_file    A2 — replaces text in a file of the notes directory; its probe reads the file.
 *   place_order  A1 — an HTTP POST to the orders service with settle's key as `Idempotency-Key`;
 *                its probe asks the service whether it holds an order under that key.
 * The worker's environment names the places: NOTES_DIR and ORDERS_URL (never the model's arguments).
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { defineTool, NoEffect } from '../../api/worker';

const notesDir = () => process.env.NOTES_DIR ?? path.resolve('notes');
const ordersUrl = () => process.env.ORDERS_URL ?? 'http://127.0.0.1:8080';

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

/** A1: the orders service deduplicates by `Idempotency-Key`, so settle's key is sent with the request. */
export const placeOrder = defineTool({
  name: 'place_order',
  description: 'Places an order for an item with the orders service (an HTTP POST).',
  args: z.strictObject({
    item: z
      .string()
      .regex(/^[a-z0-9-]{1,64}$/)
      .describe('The item code, e.g. blue-pen'),
    quantity: z.number().int().min(1).max(100).describe('How many, 1 to 100'),
  }),
  level: 'A1',
  execute: async (args, { key, assertLeaseHeld }) => {
    assertLeaseHeld();
    const response = await fetch(`${ordersUrl()}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(args),
      redirect: 'error',
    });
    if (response.status >= 400 && response.status < 500) throw new NoEffect(`the orders service refused the order (${response.status})`);
    if (!response.ok) throw new Error(`the orders service answered ${response.status}`);
    const order = (await response.json()) as { order_id: string; item: string; quantity: number };
    return order;
  },
  probe: async (_args, _intent, { key }) => {
    const response = await fetch(`${ordersUrl()}/orders/by-key/${encodeURIComponent(key)}`, { redirect: 'error' });
    if (response.status === 404) return { verdict: 'not_applied', detail: 'the orders service has no order under this key' };
    if (!response.ok) return { verdict: 'unknown', detail: `the orders service answered ${response.status}` };
    return { verdict: 'applied', result: await response.json(), detail: 'the orders service holds the order' };
  },
});

export const agentTools = [editFile, placeOrder] as const;
