/**
 * The team's own tools, defined for settle. The worker loads them as values; the workflow imports
 * them as types only (their implementations use Node and stay out of the workflow sandbox).
 */
import fs from 'node:fs';
import { z } from 'zod';
import { defineTool, NoEffect } from 'settle/worker';

/** The billing service, set by whoever runs the worker (never by a workflow's arguments). */
function billingUrl(): string {
  const url = process.env.BILLING_API_URL;
  if (!url) throw new NoEffect('BILLING_API_URL: must be set to the billing service, e.g. http://127.0.0.1:4242');
  return url;
}

interface Invoice {
  invoice_id: string;
  amount_cents: number;
}

const invoiceArgs = z.strictObject({
  customer: z
    .string()
    .regex(/^cus_[A-Za-z0-9_]{1,40}$/)
    .describe('The customer to bill, e.g. cus_42'),
  amount_cents: z.number().int().min(1).max(10_000_000).describe('Amount to invoice, in cents'),
});

/** POST /v1/invoices with settle's key as the Idempotency-Key: the service performs it once per key. */
async function postInvoice(args: z.output<typeof invoiceArgs>, key: string): Promise<Response> {
  return fetch(`${billingUrl()}/v1/invoices`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ customer: args.customer, amount_cents: args.amount_cents }),
    signal: AbortSignal.timeout(10_000),
  });
}

async function invoiceOf(response: Response, args: z.output<typeof invoiceArgs>): Promise<Invoice> {
  const body = (await response.json()) as { id: string };
  return { invoice_id: body.id, amount_cents: args.amount_cents };
}

/** A1: the key goes downstream, and the billing service deduplicates on it. */
export const createInvoice = defineTool({
  name: 'create_invoice',
  description: 'Creates an invoice for a customer in the billing service.',
  args: invoiceArgs,
  level: 'A1',
  execute: async (args, { key, assertLeaseHeld }) => {
    assertLeaseHeld();
    const response = await postInvoice(args, key);
    if (response.ok) return invoiceOf(response, args);
    // A refusal before any effect (bad parameters): settle may run the call again.
    if (response.status >= 400 && response.status < 500 && response.status !== 409) {
      throw new NoEffect(`billing refused the invoice: ${response.status} ${await response.text()}`);
    }
    // 409 (the same key still running) or 5xx: the effect may have happened; the probe finds out.
    throw new Error(`billing answered ${response.status}: ${await response.text()}`);
  },
  // Replaying with the same key answers the stored response of the request that got through, or
  // performs it now, once: either way the invoice exists exactly once afterwards.
  probe: async (args, _intent, { key }) => {
    const response = await postInvoice(args, key);
    if (response.ok)
      return { verdict: 'applied', result: await invoiceOf(response, args), detail: 'billing holds the invoice under the key' };
    return { verdict: 'unknown', detail: `billing answered ${response.status} to the replay` };
  },
});

const ledgerArgs = z.strictObject({
  ledger: z.string().min(1).max(4096).describe('Absolute path of the ledger file'),
  invoice_id: z
    .string()
    .regex(/^[A-Za-z0-9_]{1,64}$/)
    .describe('The invoice the line records'),
  amount_cents: z.number().int().min(1).max(10_000_000).describe('Amount, in cents'),
});

/** The ledger line of one call: its key makes it findable by the probe. */
const lineOf = (args: z.output<typeof ledgerArgs>, key: string) => `${args.invoice_id} ${args.amount_cents} ${key}\n`;

/** A2: an effect on disk that the probe can observe. */
export const appendLedgerLine = defineTool({
  name: 'append_ledger_line',
  description: 'Appends one line for an invoice to the ledger file.',
  args: ledgerArgs,
  level: 'A2',
  execute: async (args, { key, assertLeaseHeld }) => {
    assertLeaseHeld(); // right before the effect
    fs.appendFileSync(args.ledger, lineOf(args, key));
    return { recorded: args.invoice_id };
  },
  probe: async (_args, intent, { key }) => {
    const ledger = fs.existsSync(intent.ledger) ? fs.readFileSync(intent.ledger, 'utf8') : '';
    return ledger.includes(lineOf(intent, key))
      ? { verdict: 'applied', result: { recorded: intent.invoice_id }, detail: 'the line is in the ledger' }
      : { verdict: 'not_applied', detail: 'the line is not in the ledger' };
  },
});

export const teamTools = [createInvoice, appendLedgerLine] as const;
