/**
 * One MCP session behind settle's gateway (docs/mcp.md): each `tools/call` arrives as an update
 * and runs as a settled call in this workflow's trajectory: of the upstream's tool (the gateway's
 * worker registered those tools through SettlePlugin), or of settle's built-in on the worker's
 * workspace (`--workspace`). DETERMINISTIC CODE ONLY.
 */
import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import { settled, type CallOptions, type SettledOptions, type SettledResult } from './team-calls';
import { mcpCallUpdate, mcpCloseSignal, mcpOpenSignal, type McpCallInput, type McpSessionInput } from './mcp-definitions';

type AnyTools = Record<string, (args: unknown, call: CallOptions) => Promise<SettledResult<unknown>>>;

export async function mcpSessionWorkflow(_input: McpSessionInput): Promise<void> {
  let closed = false;
  setHandler(mcpCallUpdate, (call: McpCallInput) => {
    // The gateway's settings travel with each call: a gateway started again with others applies its own.
    const options: SettledOptions = {
      ...(call.capability !== undefined ? { capability: call.capability } : {}),
      ...(call.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: call.approvalTimeoutMs } : {}),
    };
    const tools = settled(options) as unknown as AnyTools;
    return tools[call.tool]!(call.args, { callId: call.callId, turn: call.turn });
  });
  setHandler(mcpCloseSignal, () => {
    closed = true;
  });
  // Signals apply in the order they were sent: a gateway's open after a stopped one's close keeps the session.
  setHandler(mcpOpenSignal, () => {
    closed = false;
  });
  await condition(() => closed && allHandlersFinished());
}
