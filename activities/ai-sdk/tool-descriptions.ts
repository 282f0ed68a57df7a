/**
 * The team's tools, and http_request (the built-in a team's workflow may call), as an AI SDK agent
 * shows them to its model: name, description and the JSON Schema of the arguments, read from the definitions on the worker (the workflow imports them as
 * types only). Asked by `settledAiTools` as a local activity, so a replay takes the recorded answer.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FAILURE } from '../../core/failures';
import { workspaceFreeBuiltIns } from '../tools/built-in';
import { publishTeamTool, type AnyTeamTool } from '../tools/team-tool';

export interface AiToolDescription {
  name: string;
  description: string;
  /** JSON Schema 2020-12 of the arguments, as `settle lint` checked it at worker start. */
  parameters: Record<string, unknown>;
}

export function aiToolActivities(tools: readonly AnyTeamTool[]) {
  // The built-ins a team's workflow may call (http_request) are described like the team's own.
  const byName = new Map([...workspaceFreeBuiltIns(), ...tools].map((t) => [t.name, t]));
  return {
    /** The named team tools' (and workspace-free built-ins') descriptions, in the order asked. */
    async describeAiTools(input: { names: string[] }): Promise<AiToolDescription[]> {
      return input.names.map((name) => {
        const tool = byName.get(name);
        if (!tool)
          throw ApplicationFailure.nonRetryable(
            `unknown tool ${name} (not a team tool of this worker, nor a built-in a team workflow may call)`,
            FAILURE.UnknownTool,
          );
        return publishTeamTool(tool);
      });
    },
  };
}
