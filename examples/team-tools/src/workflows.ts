/** The team's own workflow: bill a customer, then record the invoice in the ledger, each call settled. */
import { settled } from 'settle/workflow';
import type { teamTools } from './tools.js'; // types only: the implementations stay on the worker

export interface BillingInput {
  customer: string;
  amountCents: number;
  ledger: string;
}

export interface BillingResult {
  invoice: { resolution: string; invoiceId: string | null };
  ledger: { resolution: string } | null;
}

export async function billingWorkflow(input: BillingInput): Promise<BillingResult> {
  const tools = settled<typeof teamTools>();
  const invoice = await tools.create_invoice({ customer: input.customer, amount_cents: input.amountCents }, { callId: 'invoice' });
  if (invoice.result === undefined) return { invoice: { resolution: invoice.resolution, invoiceId: null }, ledger: null };
  const line = await tools.append_ledger_line(
    { ledger: input.ledger, invoice_id: invoice.result.invoice_id, amount_cents: input.amountCents },
    { callId: 'ledger' },
  );
  return { invoice: { resolution: invoice.resolution, invoiceId: invoice.result.invoice_id }, ledger: { resolution: line.resolution } };
}
