/**
 * The gateway operator's registry of an upstream MCP server's tools (docs/mcp.md): which server
 * it is (the name capabilities use), each tool's level, and how a probe tool of the same server
 * decides an in-doubt call. The server's own annotations (`readOnlyHint`, `idempotentHint`) are
 * never read: a tool the registry does not list is A2, settled.
 */
import { z } from 'zod';
import { InputError } from '../errors';
import type { SideEffectLevel } from '../tools/catalog';
import { MCP_SERVER_NAME, MCP_TOOL_NAME } from '../capability/rules';

// Copies: zod's .regex() writes lastIndex, and the exported patterns may be frozen (workers/workflow-bundle.ts).
const TOOL_NAME = new RegExp(MCP_TOOL_NAME.source);
const SERVER_NAME = new RegExp(MCP_SERVER_NAME.source);

/** A probe argument: a value taken from the in-doubt call's arguments (RFC 6901 pointer), or a literal. */
const ProbeArg = z.union([
  z.strictObject({ from: z.string().regex(/^(\/.*)?$/, 'be a JSON pointer ("" or /a/b)') }),
  z.strictObject({ value: z.json() }),
]);

const ProbeSpec = z.strictObject({
  /** A tool of the same server the registry lists as A0: it is called read-only, as often as needed. */
  tool: z.string().regex(TOOL_NAME, 'be an MCP tool name (letters, digits, . _ -, at most 128)'),
  /** The probe tool's arguments, each from the call's arguments or a literal. */
  args: z.record(z.string(), ProbeArg).default({}),
  /** The call took effect when the probe's text contains this value of the call's arguments (a pointer to a string). */
  applied_if_contains: z.string().regex(/^(\/.*)?$/, 'be a JSON pointer ("" or /a/b)'),
  /** What the probe's text not containing it proves: `unknown` (default: an operator decides) or `not_applied` (the call runs again). */
  otherwise: z.enum(['unknown', 'not_applied']).default('unknown'),
});
export type McpProbeSpec = z.output<typeof ProbeSpec>;

const ToolEntry = z.strictObject({
  level: z.enum(['A0', 'A1', 'A2', 'A3']),
  probe: ProbeSpec.optional(),
});

const Registry = z.strictObject({
  /** The name capabilities grant (`mcp:<server>/<tool>`), chosen by the operator. */
  server: z.string().regex(SERVER_NAME, 'be lower-case letters, digits, . _ - (at most 64)'),
  tools: z.record(z.string().regex(TOOL_NAME, 'be an MCP tool name (letters, digits, . _ -, at most 128)'), ToolEntry).default({}),
});
export type McpRegistry = z.output<typeof Registry>;

/** How the gateway runs one tool. */
export interface McpToolPolicy {
  level: SideEffectLevel;
  probe: McpProbeSpec | null;
  /** Whether the operator listed it (else it is A2 by default). */
  listed: boolean;
}

/** Parses the registry file's JSON text; throws InputError naming the field and the rule. */
export function parseMcpRegistry(text: string, source = 'the registry'): McpRegistry {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new InputError(source, `be JSON (${(err as Error).message})`);
  }
  const parsed = Registry.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.length ? `${source}.${issue.path.join('.')}` : source;
    // The rules written here read "be …"; zod's own ("Invalid option: expected one of …") are quoted.
    throw new InputError(at, issue.message.startsWith('be ') ? issue.message : `be valid (${issue.message})`);
  }
  const registry = parsed.data;
  for (const [name, entry] of Object.entries(registry.tools)) {
    if (!entry.probe) continue;
    if (entry.level === 'A0') throw new InputError(`${source}.tools.${name}.probe`, 'be absent on an A0 tool (nothing to settle)');
    if (registry.tools[entry.probe.tool]?.level !== 'A0') {
      throw new InputError(`${source}.tools.${name}.probe.tool`, `name a tool the registry lists as A0 (${entry.probe.tool} is not)`);
    }
  }
  return registry;
}

/** An empty registry: every tool A2, no probes. */
export function defaultRegistry(server: string): McpRegistry {
  if (!MCP_SERVER_NAME.test(server)) throw new InputError('--name', 'be lower-case letters, digits, . _ - (at most 64)');
  return { server, tools: {} };
}

/** The operator's policy for a tool: what the registry says, else A2 without a probe. */
export function policyFor(registry: McpRegistry, tool: string): McpToolPolicy {
  const entry = registry.tools[tool];
  return entry ? { level: entry.level, probe: entry.probe ?? null, listed: true } : { level: 'A2', probe: null, listed: false };
}

/** The value at an RFC 6901 pointer, or undefined. */
export function valueAt(root: unknown, pointer: string): unknown {
  if (pointer === '') return root;
  let current: unknown = root;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object' || !Object.prototype.hasOwnProperty.call(current, token)) return undefined;
    current = (current as Record<string, unknown>)[token];
  }
  return current;
}

/** The probe tool's arguments for an in-doubt call; throws when a pointer finds nothing. */
export function probeArguments(spec: McpProbeSpec, callArgs: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, arg] of Object.entries(spec.args)) {
    if ('value' in arg) {
      out[name] = arg.value;
      continue;
    }
    const value = valueAt(callArgs, arg.from);
    if (value === undefined) throw new InputError(`probe.args.${name}`, `point at a value of the call's arguments (${arg.from} is absent)`);
    out[name] = value;
  }
  return out;
}

export type McpProbeVerdict = { verdict: 'applied' | 'not_applied' | 'unknown'; detail: string };

/** The verdict from the probe tool's answer: its text contains the call's value, or not. */
export function probeVerdict(spec: McpProbeSpec, callArgs: unknown, answer: { text: string; isError: boolean }): McpProbeVerdict {
  const wanted = valueAt(callArgs, spec.applied_if_contains);
  if (typeof wanted !== 'string' || wanted === '') {
    return {
      verdict: 'unknown',
      detail: `the call's ${spec.applied_if_contains || '""'} is not a non-empty text; the probe cannot decide`,
    };
  }
  if (answer.isError) return { verdict: 'unknown', detail: `${spec.tool} answered with an error: ${answer.text.slice(0, 200)}` };
  if (answer.text.includes(wanted)) return { verdict: 'applied', detail: `${spec.tool} shows the call's ${spec.applied_if_contains}` };
  return {
    verdict: spec.otherwise,
    detail: `${spec.tool} does not show the call's ${spec.applied_if_contains}${spec.otherwise === 'unknown' ? '; an operator decides' : ''}`,
  };
}
