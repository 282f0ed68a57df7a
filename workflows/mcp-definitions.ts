/**
 * The MCP session workflow's public surface (docs/mcp.md): the gateway sends each settled
 * `tools/call` as an update and closes the session with a signal. No workflow logic here, so the
 * gateway process can import it.
 */
import { defineSignal, defineUpdate } from './define';
import type { SettledResult } from './team-calls';

export interface McpSessionInput {
  /** The upstream's name in the operator's registry (what capabilities grant: `mcp:<server>/<tool>`). */
  server: string;
}

/** One tools/call, validated by the gateway's worker as any settled call is. */
export interface McpCallInput {
  tool: string;
  args: Record<string, unknown>;
  /** The client's call id (`_meta["io.settle/call_id"]`), or the gateway's own for this process. */
  callId: string;
  turn: number;
  /**
   * `--workspace`: the session's capability, checked by the worker at every access as a
   * trajectory's is (the built-ins' paths and rights). Upstream tools are checked by the gateway.
   */
  capability?: unknown;
  /** `--approval-timeout`: how long an A3 call waits for `settle approve` before it is denied, ms. */
  approvalTimeoutMs?: number;
}

export const mcpCallUpdate = defineUpdate<SettledResult<unknown>, [McpCallInput]>('mcpCall');
/** The MCP session ended: the workflow completes once its calls have. */
export const mcpCloseSignal = defineSignal('mcpClose');
/**
 * A gateway (re)joined the session: a close still pending from a gateway that stopped before its
 * worker processed it no longer ends the session under the new gateway's calls.
 */
export const mcpOpenSignal = defineSignal('mcpOpen');
