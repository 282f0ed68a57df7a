/** A model-driven trajectory's turns. */
import { callChatCompletions, type ModelRequest } from '../model/openai-chat';
import type { ModelReply } from '../../core/model/chat';
import type { ActivityContext } from './context';

export function modelActivities({ policy }: ActivityContext) {
  return {
    /** One model turn through an OpenAI-compatible chat-completions server. */
    async callModel(request: ModelRequest): Promise<ModelReply> {
      return callChatCompletions(request, policy);
    },
  };
}
