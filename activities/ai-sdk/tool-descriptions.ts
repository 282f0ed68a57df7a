/**
 * The team's tools as an AI SDK agent shows them to its model: name, description and the JSON
 * Schema of the arguments, read from the definitions on the worker (the workflow imports them as
 * types only). Asked by `settledAiTools` as a local activity, so a replay takes the recorded answer.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../core/failures';
import { publishTeamTool, type AnyTeamTool } from '../tools/team-tool';

export interface AiToolDescription {
  name: string;
  description: string;
  /** JSON Schema 2020-12 of the arguments, as `settle lint` checked it at worker start. */
  parameters: Record<string, unknown>;
}

export function aiToolActivities(tools: readonly AnyTeamTool[]) {
  const byName = new Map(tools.map((t) => [t.name, t]));
  return {
    /** The named team tools' descriptions, in the order asked. */
    async describeAiTools(input: { names: string[] }): Promise<AiToolDescription[]> {
      return input.names.map((name) => {
        const tool = byName.get(name);
        if (!tool) throw ApplicationFailure.nonRetryable(`unknown tool ${name} (not a team tool of this worker)`, FAILURE.UnknownTool);
        return publishTeamTool(tool);
      });
    },
  };
}
