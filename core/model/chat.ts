/**
 * The model side of a model-driven trajectory, in the shape of the OpenAI-compatible
 * chat-completions API (the de-facto protocol of hosted and local model servers).
 * Pure types and helpers: the HTTP call is an activity (activities/model/).
 */

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
  | { kind: 'tool_calls'; content: string | null; calls: ChatToolCall[]; totalTokens: number };
