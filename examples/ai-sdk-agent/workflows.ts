/**
 * The agent: the AI SDK's own loop (`generateText` with `stopWhen`), its model and tools settled by
 * settle — its own edit_file and settle's built-in http_request, both authorized by the capability
 * the workflow is started with (`settle cap mint`: write on the notes, connect to the orders host).
 */
import { generateText, stepCountIs } from 'ai';
import { settledAiTools, settledModel, type BuiltIns } from '../../api/workflow';
import type { agentTools } from './tools';

export interface AgentResult {
  text: string;
  steps: number;
}

export async function agentWorkflow(prompt: string, capability: unknown): Promise<AgentResult> {
  const tools = await settledAiTools<typeof agentTools | BuiltIns>(['edit_file', 'http_request'], {
    capability,
    backoff: { initialMs: 100, maxMs: 1_000 },
  });
  const result = await generateText({
    model: settledModel('scripted-model'),
    instructions: 'You keep the team notes and place orders.',
    prompt,
    tools,
    stopWhen: stepCountIs(8),
  });
  return { text: result.text, steps: result.steps.length };
}
