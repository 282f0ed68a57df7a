/**
 * settle's worker side: register a team's own tools and settle's activities on a Temporal worker.
 *
 * @example
 * ```ts
 * import { Worker } from '@temporalio/worker';
 * import { z } from 'zod';
 * import { SettlePlugin, defineTool, NoEffect } from 'settle/worker';
 *
 * export const sendInvoice = defineTool({
 *   name: 'send_invoice',
 *   description: 'Sends one invoice through the billing API.',
 *   args: z.strictObject({ invoice_id: z.string().min(1).max(64).describe('The invoice to send') }),
 *   level: 'A1',
 *   execute: async (args, { key }) => billing.send(args.invoice_id, { idempotencyKey: key }),
 *   probe: async (args) => ((await billing.sent(args.invoice_id))
 *     ? { verdict: 'applied', result: { sent: true }, detail: 'billing lists it as sent' }
 *     : { verdict: 'not_applied', detail: 'billing never saw it' }),
 * });
 *
 * const worker = await Worker.create({
 *   plugins: [new SettlePlugin({ tools: [sendInvoice], databaseUrl: process.env.DATABASE_URL })],
 *   workflowsPath: require.resolve('./workflows'),
 *   taskQueue: 'billing',
 * });
 * await worker.run();
 * ```
 *
 * @packageDocumentation
 */

/**
 * The Temporal worker plugin: `Worker.create({ plugins: [new SettlePlugin({ tools, databaseUrl })], … })`.
 * Registers settle's activities (execute, probe, watch, operator) bound to the endpoint store on
 * `databaseUrl` (default `DATABASE_URL`), runs the migrations and the lease sweeper around the
 * worker's run, and sets `stickyQueueScheduleToStartTimeout` and `isolateExecutionTimeout`
 * unless the worker's options set them. Refuses, when made, a tool that breaks a `settle lint`
 * rule it does not accept, a duplicate name, or a name a built-in tool has.
 */
export { SettlePlugin, type SettlePluginOptions } from '../workers/settle-plugin';

/**
 * What `SettlePlugin({ models })` takes: an AI SDK provider (`createOpenAICompatible({ baseURL, apiKey, name })`)
 * or `(modelId) => LanguageModelV4`. It runs the workflows' `settledModel(modelId)` calls on this
 * worker (activity `settleAiGenerate`); the provider's base URL and key never reach history.
 */
export type { LanguageModels } from '../activities/ai-sdk/model-call';

/**
 * Defines a tool — a team's, and settle's own built-ins alike (activities/tools/built-in.ts): name,
 * description, zod `args`, a level A0–A3 and, by level, `run` (A0) or `plan` / `prepare` /
 * `execute` / `probe` / `afterSettled` / `compensate` (A1–A3). `execute` receives the call's
 * derived idempotency key (an A1 tool sends it downstream), its generation (fencing token),
 * `assertLeaseHeld()` and where it runs (`workspace`, `network`). `probe` answers from the
 * recorded intent whether the effect happened: `applied` (with the result), `not_applied` or
 * `unknown`; without one an in-doubt call waits for an operator. `access` names what a call needs
 * of a capability; `observe` shapes the recorded observation.
 */
export {
  answer,
  defineTool,
  type AcceptedFinding,
  type EffectToolDefinition,
  type PlannedAnswer,
  type ReadOnlyToolDefinition,
  type TeamExecutionContext,
  type TeamPlanContext,
  type TeamPrepareContext,
  type TeamPreparedEffect,
  type TeamProbeContext,
  type TeamTool,
  type ToolAccess,
  type ToolCompensation,
  type ToolDefinition,
  type ToolPlace,
} from '../activities/tools/team-tool';

/** What a tool's result is recorded as: output, error, exit status (the `observe` hook returns one). */
export type { Observation } from '../core/observation';

/**
 * Throw from `execute` only when it is certain the effect did not happen: the call is released
 * and run again. Any other exception leaves the call IN_DOUBT, to be settled by the probe or an operator.
 */
export { NoEffect } from '../activities/settled/settled-tool';

/** A probe's answer. */
export type { ProbeVerdict } from '../core/records';

/** A0 read-only · A1 idempotent (key sent downstream) · A2 reversible effect · A3 destructive (needs approval). */
export type { SideEffectLevel } from '../core/tools/catalog';

/**
 * settle's own worker, ready-made: its trajectory workflows and every activity, from options or
 * the environment (the `npm run worker` entry point uses it). `WORKFLOWS_PATH` is its workflows
 * module, for a worker that bundles them itself.
 */
export { createSettleWorker, WORKFLOWS_PATH } from '../workers/create-worker';
export type { SettleWorker, SettleWorkerOptions } from '../workers/create-worker';
