/**
 * Adapter for OpenAI-compatible chat-completions servers (hosted APIs, vLLM, llama.cpp, …).
 *
 * The API key is read here, in the activity, from the worker's environment variable that the
 * configuration names; it never appears in workflow input, history or logs. The spec only names
 * them: the worker's operator decides which base URLs may be called and which variables may be
 * sent as keys (activities/worker-policy.ts), and settle's own secrets are never sent.
 */
import { FAILURE } from '../../core/failures';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { boundModelReply, type ChatMessage, type ChatToolCall, type ModelConfig, type ModelReply } from '../../core/model/chat';
import type { PublishedTool } from '../../core/tools/catalog';
import { isReservedVariable, MODEL_ENDPOINTS_VARIABLE, MODEL_KEY_ENVS_VARIABLE, modelEndpoint, type WorkerPolicy } from '../worker-policy';

export interface ModelRequest {
  config: ModelConfig;
  messages: ChatMessage[];
  tools: PublishedTool[];
}

const REQUEST_TIMEOUT_MS = 120_000;

export async function callChatCompletions(
  request: ModelRequest,
  policy: Pick<WorkerPolicy, 'modelEndpoints' | 'modelKeyEnvs'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ModelReply> {
  const { config } = request;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const refusal = modelConfigRefusal(config, policy);
  if (refusal) throw ApplicationFailure.nonRetryable(refusal, FAILURE.ModelConfig);
  if (config.apiKeyEnv) {
    const key = env[config.apiKeyEnv];
    if (!key) {
      throw ApplicationFailure.nonRetryable(
        `model.apiKeyEnv: environment variable ${config.apiKeyEnv} must be set on the worker`,
        FAILURE.ModelConfig,
      );
    }
    headers.authorization = `Bearer ${key}`;
  }
  const body = {
    model: config.model,
    temperature: config.temperature ?? 0,
    messages: config.system ? [{ role: 'system', content: config.system }, ...request.messages] : request.messages,
    tools: request.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: withoutDialect(t.parameters) },
    })),
    tool_choice: 'auto',
  };
  const url = `${config.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    // A redirect would carry the request (and the key) to a server the operator did not allow.
    redirect: 'error',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await response.text();
  if (!response.ok) {
    const failure = `model server ${url} answered ${response.status}: ${text.slice(0, 500)}`;
    // 4xx (except 408/429) will not get better by retrying.
    if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
      throw ApplicationFailure.nonRetryable(failure, FAILURE.ModelRejected);
    }
    throw new Error(failure);
  }
  // Fitted before it leaves the activity: the reply is a payload in history.
  return boundModelReply(parseReply(text));
}

/** Why the worker refuses this model configuration, or null (fail closed: nothing allowed by default). */
export function modelConfigRefusal(config: ModelConfig, policy: Pick<WorkerPolicy, 'modelEndpoints' | 'modelKeyEnvs'>): string | null {
  let endpoint: string;
  try {
    endpoint = modelEndpoint(config.baseUrl);
  } catch {
    return `model.baseUrl: must be a URL (got ${JSON.stringify(config.baseUrl)})`;
  }
  if (!policy.modelEndpoints.includes(endpoint)) {
    return `model.baseUrl: ${endpoint} is not among the model endpoints this worker's operator allows (${MODEL_ENDPOINTS_VARIABLE}: ${policy.modelEndpoints.join(', ') || 'none'})`;
  }
  const name = config.apiKeyEnv;
  if (name !== undefined) {
    if (isReservedVariable(name)) return `model.apiKeyEnv: ${name} is one of settle's own secrets and is never sent anywhere`;
    if (!policy.modelKeyEnvs.includes(name)) {
      return `model.apiKeyEnv: ${name} is not among the variables this worker's operator allows as model keys (${MODEL_KEY_ENVS_VARIABLE}: ${policy.modelKeyEnvs.join(', ') || 'none'})`;
    }
  }
  return null;
}

/** Some servers reject `$schema` inside function parameters; the schema is otherwise as published. */
function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/** The parts of a chat-completions response settle reads; servers differ in the rest. */
const ChatCompletion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().nullish(),
                function: z.object({ name: z.string().nullish(), arguments: z.unknown() }).nullish(),
              }),
            )
            .nullish(),
        }),
      }),
    )
    .min(1),
  usage: z.object({ total_tokens: z.number().nullish() }).nullish(),
});

function parseReply(text: string): ModelReply {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`model server answered with non-JSON: ${text.slice(0, 200)}`);
  }
  const parsed = ChatCompletion.safeParse(json);
  if (!parsed.success) throw new Error(`model server answered without choices[0].message: ${text.slice(0, 200)}`);
  const { message } = parsed.data.choices[0]!;
  const totalTokens = parsed.data.usage?.total_tokens ?? 0;
  const calls: ChatToolCall[] = (message.tool_calls ?? []).map((c, i) => ({
    id: c.id ?? `call_${i}`,
    type: 'function',
    function: {
      name: c.function?.name ?? '',
      // Some servers send arguments as an object instead of JSON text.
      arguments: typeof c.function?.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function?.arguments ?? {}),
    },
  }));
  if (calls.length > 0) return { kind: 'tool_calls', content: message.content ?? null, calls, totalTokens };
  return { kind: 'final', content: message.content ?? '', totalTokens };
}
