/**
 * The model call of an AI SDK agent, as an activity: the workflow's `settledModel` (workflows/ai-sdk.ts)
 * sends the AI SDK's call options here, and the worker's own provider (`@ai-sdk/openai`,
 * `@ai-sdk/openai-compatible`, …) runs it. The provider, its base URL and its API key are the
 * worker operator's: they never appear in workflow code or history.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { LanguageModelLike, ModelCallOptions, ModelGeneration } from '../../core/ai-sdk';
import { FAILURE } from '../../core/failures';

/** Where the worker finds a language model by id: an AI SDK provider (`createOpenAICompatible(…)`) or a function. */
export type LanguageModels = { languageModel(modelId: string): LanguageModelLike } | ((modelId: string) => LanguageModelLike);

/** One generation as it is recorded in history: what the AI SDK needs to go on, without raw bodies or headers. */
export type RecordedGeneration = Omit<ModelGeneration, 'request' | 'response'> & {
  response?: { id?: string; modelId?: string; timestamp?: string };
};

/** A reply larger than this is refused rather than recorded (Temporal refuses payloads above 2 MB). */
const MAX_RECORDED_BYTES = 1_000_000;

export function aiModelActivities(models: LanguageModels | undefined) {
  return {
    /** Runs one `doGenerate` of the named model on this worker's provider. */
    async settleAiGenerate(input: { modelId: string; options: ModelCallOptions }): Promise<RecordedGeneration> {
      if (!models) {
        throw ApplicationFailure.nonRetryable(
          'SettlePlugin models: not set on this worker; give it the AI SDK provider that runs settledModel() calls',
          FAILURE.ModelConfig,
        );
      }
      const model = typeof models === 'function' ? models(input.modelId) : models.languageModel(input.modelId);
      const result = (await model.doGenerate({ ...input.options, abortSignal: Context.current().cancellationSignal })) as ModelGeneration;
      const recorded: RecordedGeneration = {
        content: result.content,
        finishReason: result.finishReason,
        usage: result.usage,
        warnings: result.warnings,
        ...(result.providerMetadata ? { providerMetadata: result.providerMetadata } : {}),
        ...(result.structuredOutputText !== undefined ? { structuredOutputText: result.structuredOutputText } : {}),
        ...(result.response
          ? {
              response: {
                ...(result.response.id !== undefined ? { id: result.response.id } : {}),
                ...(result.response.modelId !== undefined ? { modelId: result.response.modelId } : {}),
                ...(result.response.timestamp ? { timestamp: result.response.timestamp.toISOString() } : {}),
              },
            }
          : {}),
      };
      const bytes = Buffer.byteLength(JSON.stringify(recorded));
      if (bytes > MAX_RECORDED_BYTES) {
        throw ApplicationFailure.nonRetryable(
          `model reply: must be at most ${MAX_RECORDED_BYTES} bytes as JSON to be recorded (got ${bytes})`,
          FAILURE.ModelRejected,
        );
      }
      return recorded;
    },
  };
}
