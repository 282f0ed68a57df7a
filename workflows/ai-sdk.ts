/**
 * An agent written with the Vercel AI SDK (`generateText` in the team's workflow), its model call
 * an activity and its tools settled calls (docs/ai-sdk.md). DETERMINISTIC CODE ONLY (workflow sandbox).
 *
 * Imports nothing from `ai` at run time: the tools are plain objects of the shape `tool()` makes
 * and the model is a plain object on `@ai-sdk/provider`'s interface, so `settle/workflow` works in
 * workflows that never use the AI SDK.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type {
  AiToolLike,
  LanguageModelLike,
  ModelCallOptions,
  ModelGeneration,
  ModelPromptMessage,
  PublishedInputSchema,
  ToolCallContext,
} from '../core/ai-sdk';
import { FAILURE } from '../core/failures';
import { failed, type Observation } from '../core/observation';
import type { SettleActivities } from '../activities/index';
import type { aiModelActivities } from '../activities/ai-sdk/model-call';
import type { aiToolActivities } from '../activities/ai-sdk/tool-descriptions';
import type { AnyTeamTool, TeamTool } from '../activities/tools/team-tool';
import { settled, type SettledOptions, type SettledResult } from './team-calls';
import type { z } from 'zod';

type AiSdkActivities = ReturnType<typeof aiModelActivities> & ReturnType<typeof aiToolActivities>;

const { describeAiTools } = proxyLocalActivities<AiSdkActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});
const { recordProposedCall } = proxyLocalActivities<SettleActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds' },
});

/** How the model's calls run as activities. */
export interface SettledModelOptions {
  /** One model call's limit in milliseconds (default 300 000). */
  timeoutMs?: number;
  /** Attempts per model call, the first included (default 5); a 4xx other than 408/429 is not retried by the provider. */
  maximumAttempts?: number;
}

/**
 * A language model for `generateText` in a workflow: each step's model call is the activity
 * `settleAiGenerate` on a worker whose `SettlePlugin({ models })` names the AI SDK provider that
 * runs `modelId`. The reply is recorded in history, so a replay or a restarted worker takes the
 * recorded step and never asks the model again.
 */
export function settledModel(modelId: string, options: SettledModelOptions = {}): LanguageModelLike {
  const { settleAiGenerate } = proxyActivities<AiSdkActivities>({
    startToCloseTimeout: options.timeoutMs ?? 300_000,
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: options.maximumAttempts ?? 5 },
  });
  return {
    specificationVersion: 'v4',
    provider: 'settle',
    modelId,
    // Every URL goes to the model as text: the worker's provider downloads nothing on the workflow's behalf.
    supportedUrls: {},
    async doGenerate(call: ModelCallOptions): Promise<ModelGeneration> {
      const { abortSignal: _signal, ...callOptions } = call;
      refuseBinaryParts(callOptions.prompt);
      const recorded = await settleAiGenerate({ modelId, options: callOptions });
      const { response, ...rest } = recorded;
      return {
        ...rest,
        ...(response
          ? { response: { ...response, ...(response.timestamp ? { timestamp: new Date(response.timestamp) } : { timestamp: undefined }) } }
          : {}),
      };
    },
    async doStream(): Promise<never> {
      throw ApplicationFailure.nonRetryable(
        'settledModel: streaming is not supported in a workflow; use generateText',
        FAILURE.ModelConfig,
      );
    },
  };
}

/** Bytes would not survive the trip through history as JSON: refused with the part named. */
function refuseBinaryParts(prompt: ModelCallOptions['prompt']): void {
  prompt.forEach((message: ModelPromptMessage, m) => {
    if (typeof message.content === 'string') return;
    message.content.forEach((part, p) => {
      const data = part.data;
      if (data instanceof Uint8Array || data instanceof URL) {
        throw ApplicationFailure.nonRetryable(
          `settledModel prompt[${m}].content[${p}].data: must be base64 text or a URL string (bytes and URL objects are not recorded)`,
          FAILURE.ModelConfig,
        );
      }
    });
  });
}

type ToolsOf<Tools> = Tools extends readonly AnyTeamTool[]
  ? Tools[number]
  : Tools extends Record<string, AnyTeamTool>
    ? Tools[keyof Tools]
    : never;
type ArgsOf<T> = T extends TeamTool<string, infer S, unknown, unknown> ? z.input<S> : never;

/** One AI SDK tool per named team tool: `generateText({ tools })` takes them as they are. */
export type SettledAiTools<Tools, Names extends string> = {
  [T in ToolsOf<Tools> as T['name'] extends Names ? T['name'] : never]: AiToolLike<ArgsOf<T>, Observation>;
};

/**
 * The named team tools as AI SDK tools (`tool({ description, inputSchema, execute })`), whose
 * `execute` is a settled call: the model's `toolCallId` is the call id and the step number the
 * turn. The model sees the tool's observation (its result as JSON text in `output`, or `error`).
 * A call whose arguments break the tool's schema runs nothing: the model gets `invalid call:
 * <field> must <rule>` to repair it, and the call is counted as malformed (`settle stats`).
 */
export async function settledAiTools<Tools, const Names extends ToolsOf<Tools>['name'] = ToolsOf<Tools>['name']>(
  names: readonly Names[],
  options: SettledOptions = {},
): Promise<SettledAiTools<Tools, Names>> {
  const described = await describeAiTools({ names: [...names] });
  const calls = settled<Tools>(options) as unknown as Record<string, RunCall>;
  const inFlight = new Map<string, Promise<unknown>>();
  const tools: Record<string, AiToolLike<unknown, Observation>> = {};
  for (const { name, description, parameters } of described) {
    tools[name] = {
      description,
      inputSchema: passThroughSchema(parameters),
      execute: async (input: unknown, { toolCallId, messages }: ToolCallContext) => {
        const turn = stepOf(messages);
        // The same call id twice in one reply: the second waits for the first, then finds it settled (`replayed`).
        const slot = `${turn}\u0000${toolCallId}`;
        const before = inFlight.get(slot) ?? Promise.resolve();
        const run = before.catch(() => undefined).then(() => callOnce(name, calls[name]!, input, toolCallId, turn));
        inFlight.set(slot, run);
        return run;
      },
    };
  }
  return tools as SettledAiTools<Tools, Names>;
}

type RunCall = (args: unknown, call: { callId: string; turn: number }) => Promise<SettledResult<unknown>>;

async function callOnce(tool: string, run: RunCall, input: unknown, callId: string, turn: number): Promise<Observation> {
  const trajectoryId = workflowInfo().workflowId;
  let result: SettledResult<unknown>;
  try {
    result = await run(input, { callId, turn });
  } catch (err) {
    const issue = invalidArguments(err);
    if (!issue) throw err;
    await recordProposedCall({ trajectoryId, turn, callId, tool, issue });
    // As a trajectory answers a malformed call: the field and the rule, for the model's repair round.
    return failed(`invalid call: ${issue.field} must ${issue.rule}`);
  }
  await recordProposedCall({ trajectoryId, turn, callId, tool, issue: null });
  return result.observation;
}

/** The broken rule of a call the worker's registry refused for its arguments, or null for any other failure. */
function invalidArguments(err: unknown): { field: string; rule: string } | null {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  if (!(failure instanceof ApplicationFailure) || failure.type !== FAILURE.InvalidArgs) return null;
  const detail = failure.details?.[0] as { field?: unknown; rule?: unknown } | undefined;
  if (typeof detail?.field === 'string' && typeof detail.rule === 'string') return { field: detail.field, rule: detail.rule };
  return { field: 'args', rule: failure.message };
}

/**
 * The step a tool call belongs to: the assistant messages before it. In one `generateText` that is
 * its step number; a conversation continued by another `generateText` keeps counting.
 */
function stepOf(messages: ToolCallContext['messages']): number {
  return messages.filter((m) => m.role === 'assistant').length;
}

/**
 * The tool's published JSON Schema as a Standard Schema the AI SDK reads, with no validation of
 * its own: the worker validates with the tool's zod schema, so the malformed call is answered,
 * and counted, in one place.
 */
function passThroughSchema(parameters: Record<string, unknown>): PublishedInputSchema<unknown> {
  const { $schema: _dialect, ...schema } = parameters;
  return {
    '~standard': {
      version: 1,
      vendor: 'settle',
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: () => schema, output: () => schema },
    },
  };
}
