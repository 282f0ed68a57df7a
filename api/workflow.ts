/**
 * settle's workflow side: settled calls of a team's tools from the team's own workflow. Safe in
 * Temporal's workflow sandbox: it imports no Node built-ins and no tool implementations (the
 * tools' types only).
 *
 * @example
 * ```ts
 * import { settled } from 'settle/workflow';
 * import type { billingTools } from './tools'; // types only: the implementations stay on the worker
 *
 * export async function billingWorkflow(invoiceId: string): Promise<string> {
 *   const tools = settled<typeof billingTools>();
 *   const sent = await tools.send_invoice({ invoice_id: invoiceId }, { callId: 'send' });
 *   return sent.resolution;
 * }
 * ```
 *
 * @packageDocumentation
 */

/**
 * Returns one typed function per tool of `Tools` (an array or object of `defineTool` definitions,
 * as a type). `await tools.send_invoice(args, { callId, turn })`:
 *
 * 1. has the worker's registry validate the arguments and give the tool's level and probe support
 *    (a local activity: recorded, so a replay takes the same answer);
 * 2. derives the idempotency key from (workflow id, turn, call id, tool, validated arguments);
 * 3. runs the call as settle runs every call: claim, lease, fence; an IN_DOUBT call is probed, and
 *    waits for an operator (`settle resolve`, through the update this helper installs) while no
 *    probe can tell;
 * 4. returns how it ended, with the tool's result.
 *
 * The same call id with the same arguments in the same workflow and turn is the same call: it
 * runs once, and again it returns the recorded result. An A3 call first waits for `settle approve`
 * (the approval update this helper installs). With `settled({ capability })` every call is
 * authorized against the capability by what the tool's definition says it accesses.
 */
export { settled } from '../workflows/team-calls';

/**
 * Undoes this workflow's completed A2/A3 calls, newest first, through each tool's `compensate`:
 * call it when the work fails or is cancelled (inside `CancellationScope.nonCancellable` for a
 * cancellation). Each undoing call is settled itself; asked again, nothing runs twice.
 */
export { compensate } from '../workflows/team-calls';
export type { CallOptions, SettledOptions, SettledResult, SettledTools } from '../workflows/team-calls';

/**
 * The built-ins a team's workflow calls through settled(), as a type: `http_request` (docs/http-request.md),
 * which needs no workspace, only a capability (`settled({ capability })`, its host: objects the
 * call's reach). `settled<typeof teamTools | BuiltIns>({ capability })` types them next to the
 * team's own tools. The file and shell built-ins need a trajectory's workspace: settled() refuses them.
 */
export type { BuiltIns } from '../activities/tools/built-in';
export type { HttpResponse } from '../activities/tools/http-request';
export type { Observation } from '../core/observation';

/**
 * An agent written with the Vercel AI SDK, settled (docs/ai-sdk.md): `settledModel(modelId)` is a
 * language model whose calls are activities on a worker with `SettlePlugin({ models })`;
 * `await settledAiTools<typeof teamTools>(['edit_note', 'place_order'])` gives the team's tools (and,
 * typed by `BuiltIns` and with a capability, the built-in `http_request`) as
 * AI SDK tools whose `execute` is a settled call (the model's `toolCallId` as call id, the step as
 * turn). A malformed call answers the model with the broken rule and counts for `settle stats`.
 *
 * @example
 * ```ts
 * import { generateText, stepCountIs } from 'ai';
 * import { settledAiTools, settledModel } from 'settle/workflow';
 * import type { teamTools } from './tools';
 *
 * export async function agent(prompt: string): Promise<string> {
 *   const tools = await settledAiTools<typeof teamTools>(['edit_note', 'place_order']);
 *   const { text } = await generateText({ model: settledModel('gpt-4.1'), tools, prompt, stopWhen: stepCountIs(8) });
 *   return text;
 * }
 * ```
 */
export { settledAiTools, settledModel } from '../workflows/ai-sdk';
export type { SettledAiTools, SettledModelOptions } from '../workflows/ai-sdk';

/** settle's ready-made trajectory workflow, with its updates, queries and types (driven by `SettleClient`). */
export * from '../workflows/definitions';
export { trajectoryWorkflow } from '../workflows/index';
