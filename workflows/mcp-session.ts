/**
 * One MCP session behind settle's gateway (docs/mcp.md): each `tools/call` arrives as an update
 * and runs as a settled call of the upstream's tool (the gateway's worker registered those tools
 * through SettlePlugin), in this workflow's trajectory. DETERMINISTIC CODE ONLY.
 */
import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import { settled, type CallOptions, type SettledResult } from './team-calls';
import { mcpCallUpdate, mcpCloseSignal, type McpCallInput, type McpSessionInput } from './mcp-definitions';

type AnyTools = Record<string, (args: unknown, call: CallOptions) => Promise<SettledResult<unknown>>>;

export async function mcpSessionWorkflow(_input: McpSessionInput): Promise<void> {
  const tools = settled() as unknown as AnyTools;
  let closed = false;
  setHandler(mcpCallUpdate, (call: McpCallInput) => tools[call.tool]!(call.args, { callId: call.callId, turn: call.turn }));
  setHandler(mcpCloseSignal, () => {
    closed = true;
  });
  await condition(() => closed && allHandlersFinished());
}
