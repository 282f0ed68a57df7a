/**
 * The model side of a model-driven trajectory, in the shape of the OpenAI-compatible
 * chat-completions API (the de-facto protocol of hosted and local model servers).
 * Pure types and helpers: the HTTP call is an activity (activities/model/).
 */
import { MAX_MODEL_TEXT_CHARS } from '../history-budget';
import { truncate } from '../observation';
import { MAX_ARGS_CHARS, MAX_CALL_ID_CHARS, MAX_CALLS_PER_TURN } from '../trajectory-input';

export interface ModelConfig {
  /** e.g. http://127.0.0.1:8000/v1 — the adapter POSTs to `${baseUrl}/chat/completions`. */
  baseUrl: string;
  model: string;
  /**
   * Name of the worker's environment variable holding the API key. The key itself never
   * enters workflow input or history; only this name does.
   */
  apiKeyEnv?: string;
  /** Optional system prompt. */
  system?: string;
  /** Sampling temperature; default 0 for reproducible trajectories. */
  temperature?: number;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** What one model turn produced. */
export type ModelReply =
  | { kind: 'final'; content: string; totalTokens: number }
  | {
      kind: 'tool_calls';
      content: string | null;
      calls: ChatToolCall[];
      totalTokens: number;
      /**
       * Calls refused before they entered history, by index into `calls` (their arguments were
       * replaced by `{}`): the rule each broke, answered to the model as a malformed call.
       */
      refused?: Record<number, string>;
    };

/**
 * A model reply fitted to what may enter history (docs/design.md#history-budget): text cut to
 * MAX_MODEL_TEXT_CHARS, at most MAX_CALLS_PER_TURN calls (the rest dropped, as if never made),
 * arguments over MAX_ARGS_CHARS replaced by `{}` and refused with the rule they broke.
 */
export function boundModelReply(reply: ModelReply): ModelReply {
  const text = (t: string) => truncate(t, MAX_MODEL_TEXT_CHARS).text;
  if (reply.kind === 'final') return { ...reply, content: text(reply.content) };
  const refused: Record<number, string> = { ...reply.refused };
  const calls = reply.calls.slice(0, MAX_CALLS_PER_TURN).map((c, i) => {
    const id = c.id.length > MAX_CALL_ID_CHARS ? c.id.slice(0, MAX_CALL_ID_CHARS) : c.id;
    const name = c.function.name.slice(0, 64);
    if (c.function.arguments.length <= MAX_ARGS_CHARS) return { ...c, id, function: { name, arguments: c.function.arguments } };
    refused[i] = `args must be at most ${MAX_ARGS_CHARS} characters of JSON (got ${c.function.arguments.length})`;
    return { ...c, id, function: { name, arguments: '{}' } };
  });
  return {
    ...reply,
    content: reply.content === null ? null : text(reply.content),
    calls,
    ...(Object.keys(refused).length ? { refused } : {}),
  };
}
