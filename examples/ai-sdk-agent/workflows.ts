/** The agent: the AI SDK's own loop (`generateText` with `stopWhen`), its model and tools settled by settle. */
import { generateText, stepCountIs } from 'ai';
import { settledAiTools, settledModel } from '../../api/workflow';
import type { agentTools } from './tools';

export interface AgentResult {
  text: string;
  steps: number;
}

export async function agentWorkflow(prompt: string): Promise<AgentResult> {
  const tools = await settledAiTools<typeof agentTools>(['edit_file', 'place_order'], { backoff: { initialMs: 100, maxMs: 1_000 } });
  const result = await generateText({
    model: settledModel('scripted-model'),
    instructions: 'You keep the team notes and place orders.',
    prompt,
    tools,
    stopWhen: stepCountIs(8),
  });
  return { text: result.text, steps: result.steps.length };
}
