/**
 * The parts of the Vercel AI SDK's interfaces settle relies on, written structurally: settle's
 * own declarations import nothing from `ai` or `@ai-sdk/*`, which stay optional peers for teams
 * that use them (docs/ai-sdk.md). `@ai-sdk/provider` v4's `LanguageModelV4` and `ai` v7's `Tool`
 * are assignable to and from these (examples/ai-sdk-agent type-checks that).
 */

/** One message of a model call's prompt; file parts carry `data`. */
export interface ModelPromptMessage {
  role: string;
  content: string | ReadonlyArray<{ type: string; data?: unknown }>;
}

/** A model call's options (`LanguageModelV4CallOptions`): the prompt, tools, settings; no abort signal once recorded. */
export interface ModelCallOptions {
  prompt: ReadonlyArray<ModelPromptMessage>;
  abortSignal?: unknown;
  [option: string]: unknown;
}

/** One generation (`LanguageModelV4GenerateResult`). */
export interface ModelGeneration {
  content: unknown[];
  finishReason: unknown;
  usage: unknown;
  warnings: unknown[];
  providerMetadata?: unknown;
  structuredOutputText?: string;
  request?: unknown;
  response?: { id?: string; modelId?: string; timestamp?: Date };
}

/** A language model on `@ai-sdk/provider`'s v4 interface. */
export interface LanguageModelLike {
  readonly specificationVersion: 'v4';
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: PromiseLike<Record<string, RegExp[]>> | Record<string, RegExp[]>;
  // `any`: the AI SDK's own option and result types, which settle's declarations do not import.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  doGenerate(options: any): PromiseLike<any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  doStream(options: any): PromiseLike<any>;
}

/** What a tool's `execute` receives from the AI SDK (`ToolExecutionOptions`), as far as settle reads it. */
export interface ToolCallContext {
  toolCallId: string;
  messages: ReadonlyArray<{ role: string }>;
}

/** A Standard Schema with a JSON Schema converter: the AI SDK takes it as a tool's `inputSchema`. */
export interface PublishedInputSchema<Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => { value: Input };
    readonly types?: { readonly input: unknown; readonly output: Input };
    readonly jsonSchema: {
      readonly input: (options: { target: string }) => Record<string, unknown>;
      readonly output: (options: { target: string }) => Record<string, unknown>;
    };
  };
}

/** An AI SDK tool (`tool({ description, inputSchema, execute })`) whose result is `Output`. */
export interface AiToolLike<Input, Output> {
  description: string;
  inputSchema: PublishedInputSchema<Input>;
  execute: (input: Input, options: ToolCallContext) => Promise<Output>;
}
