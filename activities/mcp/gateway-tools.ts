/**
 * The upstream MCP server's tools as settle tool definitions (defineTool), built when the gateway
 * starts from the server's tools/list and the operator's registry (docs/mcp.md). Each definition's
 * effect is the upstream call itself: A0 runs it read-only; A1–A3 run it settled, with the call's
 * key in the request's `_meta`, and probe it through the registry's probe tool.
 */
import { z } from 'zod';
import { TOOL_NAME_PATTERN } from '../../core/key';
import { isToolName, type SideEffectLevel } from '../../core/tools/catalog';
import { SPAWN_SUBAGENT } from '../../core/capability/subagent';
import { policyFor, probeArguments, probeVerdict, type McpProbeSpec, type McpRegistry } from '../../core/mcp/registry';
import { errorMessage } from '../../core/errors';
import type { ProbeVerdict } from '../../core/records';
import { failpoint } from '../failpoints';
import { NoEffect } from '../settled/settled-tool';
import { defineTool, type AnyTeamTool } from '../tools/team-tool';
import type { UpstreamCallResult, UpstreamServer, UpstreamTool } from './upstream';

/** The `_meta` member carrying the call's idempotency key to the upstream. */
export const KEY_META = 'io.settle/key';

/**
 * Any JSON object: the upstream validates its own arguments (and says so in its result); the
 * gateway only needs them to be JSON so that the key can be derived from them.
 */
const upstreamArgs = () => z.record(z.string(), z.json());

/** The wrapper schema is never shown to a model (the upstream's is); its lint findings are expected. */
const ACCEPTED = [
  { rule: 'untyped-bag', reason: "the gateway's pass-through schema; the client sees the upstream's own, linted at start" },
  { rule: 'bounded-types', reason: "the gateway's pass-through schema; the client sees the upstream's own, linted at start" },
] as const;

/** How the gateway serves one upstream tool. */
export type GatewayTool =
  | { name: string; served: true; level: SideEffectLevel; probe: boolean }
  /** Listed to the client unchanged, but every call is refused with `reason`. */
  | { name: string; served: false; reason: string };

export interface GatewayTools {
  /** What the gateway's worker registers through SettlePlugin. */
  definitions: AnyTeamTool[];
  /** By upstream tool name. */
  tools: Map<string, GatewayTool>;
}

export function gatewayTools(upstream: UpstreamServer, listed: readonly UpstreamTool[], registry: McpRegistry): GatewayTools {
  const definitions: AnyTeamTool[] = [];
  const tools = new Map<string, GatewayTool>();
  for (const tool of listed) {
    if (typeof tool.name !== 'string') continue;
    const name = tool.name;
    if (tools.has(name)) {
      tools.set(name, { name, served: false, reason: `the upstream lists ${name} twice` });
      continue;
    }
    const refusal = unsupportedName(name);
    if (refusal) {
      tools.set(name, { name, served: false, reason: refusal });
      continue;
    }
    const policy = policyFor(registry, name);
    const description = typeof tool.description === 'string' && tool.description.trim() ? tool.description : name;
    definitions.push(
      policy.level === 'A0'
        ? defineTool({
            name,
            description,
            args: upstreamArgs(),
            accept: ACCEPTED,
            level: 'A0',
            run: async (args) => upstream.callTool(name, args, {}),
          })
        : defineTool({
            name,
            description,
            args: upstreamArgs(),
            accept: ACCEPTED,
            level: policy.level,
            // The worker checks the session's capability too (the gateway checked it before the update): `mcp:<server>/<tool>`, write.
            access: () => ({ right: 'write', target: { kind: 'mcp', server: registry.server, tool: name } }),
            execute: async (args, { key, assertLeaseHeld }) => {
              await upstream.ready().catch((err: unknown) => {
                // The request was never sent: nothing can have happened.
                throw new NoEffect(`the upstream MCP server did not start: ${errorMessage(err)}`);
              });
              assertLeaseHeld(); // right before the effect
              await failpoint('mcp.before_call');
              const result = await upstream.callTool(name, args, { [KEY_META]: key });
              await failpoint('mcp.after_call');
              return result;
            },
            ...(policy.probe ? { probe: probeWith(upstream, policy.probe) } : {}),
          }),
    );
    tools.set(name, { name, served: true, level: policy.level, probe: policy.probe !== null });
  }
  for (const name of Object.keys(registry.tools)) {
    if (!tools.has(name)) throw new Error(`the registry lists ${name}, which the upstream does not list`);
  }
  return { definitions, tools };
}

/** Why settle cannot run a tool of this name, or null. */
function unsupportedName(name: string): string | null {
  if (!TOOL_NAME_PATTERN.test(name)) {
    return `settle runs tools named with lower-case letters, digits, _ and - (a letter first, at most 64 characters); ${JSON.stringify(name)} is not`;
  }
  if (isToolName(name) || name === SPAWN_SUBAGENT) return `${name} is the name of a settle built-in tool`;
  return null;
}

function probeWith(upstream: UpstreamServer, spec: McpProbeSpec) {
  return async (args: Record<string, unknown>): Promise<ProbeVerdict<UpstreamCallResult>> => {
    let answer: UpstreamCallResult;
    try {
      answer = await upstream.callTool(spec.tool, probeArguments(spec, args), {});
    } catch (err) {
      return { verdict: 'unknown' as const, detail: `${spec.tool} did not answer: ${errorMessage(err)}` };
    }
    const verdict = probeVerdict(spec, args, { text: textOf(answer), isError: answer.isError === true });
    if (verdict.verdict === 'not_applied') return { verdict: 'not_applied', detail: verdict.detail };
    if (verdict.verdict === 'unknown') return { verdict: 'unknown', detail: verdict.detail };
    const result: UpstreamCallResult = { content: [{ type: 'text', text: `settled by probe: ${verdict.detail}` }] };
    return { verdict: 'applied' as const, detail: verdict.detail, result };
  };
}

/** The text a result shows: its text content, then its structured content as JSON. */
export function textOf(result: UpstreamCallResult): string {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    if (item && typeof item === 'object' && (item as { type?: unknown }).type === 'text')
      parts.push(String((item as { text?: unknown }).text));
  }
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}
