/**
 * settle's own tools as `settle mcp serve --workspace DIR` lists them (docs/mcp.md): the built-ins
 * a session's settled() call runs on the operator's workspace, each with the JSON Schema of its
 * argument model (what `settle tools` publishes), its description, and annotations that say its
 * level: read-only only at A0. spawn_subagent is a trajectory's (a child workflow): not served.
 */
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { SideEffectLevel } from '../../core/tools/catalog';
import { BASH_EXECUTE } from '../../core/tools/bash-execute';
import { HTTP_REQUEST } from '../../core/tools/http-request';
import { builtInTools } from '../tools/built-in';
import { publishTeamTool } from '../tools/team-tool';

/** The `_meta` member of a listed tool that carries settle's level (A0–A3). */
export const LEVEL_META = 'io.settle/level';

export interface WorkspaceTool {
  name: string;
  level: SideEffectLevel;
  /** The tool as tools/list shows it. */
  listed: Tool;
}

export interface WorkspaceTools {
  tools: Map<string, WorkspaceTool>;
  /** Built-ins this gateway does not serve, and why (for its log). */
  skipped: { name: string; reason: string }[];
}

/** The built-ins served on a workspace; http_request only with a capability (its hosts are the capability's). */
export function workspaceTools(options: { capability: boolean }): WorkspaceTools {
  const tools = new Map<string, WorkspaceTool>();
  const skipped: WorkspaceTools['skipped'] = [];
  for (const definition of Object.values(builtInTools())) {
    if (definition.name === HTTP_REQUEST && !options.capability) {
      skipped.push({
        name: HTTP_REQUEST,
        reason: 'it reaches only the hosts a capability grants (connect right, host: objects); served --ungated it could reach none',
      });
      continue;
    }
    const { description, parameters } = publishTeamTool(definition);
    // The schema's own description is the tool's description; the rest is the arguments' schema.
    const { description: _described, ...inputSchema } = parameters;
    tools.set(definition.name, {
      name: definition.name,
      level: definition.level,
      listed: {
        name: definition.name,
        description,
        inputSchema: inputSchema as Tool['inputSchema'],
        annotations: annotationsFor(definition.name, definition.level),
        _meta: { [LEVEL_META]: definition.level },
      },
    });
  }
  return { tools, skipped };
}

/** What the MCP hints can say truthfully of a level: read-only at A0 only; an effect may destroy, and only A1 repeats harmlessly. */
function annotationsFor(name: string, level: SideEffectLevel): ToolAnnotations {
  const openWorld = name === HTTP_REQUEST || name === BASH_EXECUTE; // the network, when the capability grants `connect`
  if (level === 'A0') return { readOnlyHint: true, openWorldHint: openWorld };
  return { readOnlyHint: false, destructiveHint: true, idempotentHint: level === 'A1', openWorldHint: openWorld };
}
