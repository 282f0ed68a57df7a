/** What every rule gets, and the one way rules report. */
import type { Finding, RuleId, Severity, ToolDefinition } from '../types';
import type { SchemaNode } from '../walk';

export interface RuleContext {
  tool: ToolDefinition;
}

/** Looks at one sub-schema; rules of this kind run in document order over every node. */
export type NodeRule = (n: SchemaNode, ctx: RuleContext) => Finding[];

/** Looks at a definition as a whole. */
export type ToolRule = (ctx: RuleContext) => Finding[];

export function finding(ctx: RuleContext, severity: Severity, rule: RuleId, pointer: string, message: string, hint: string): Finding {
  return { severity, rule, tool: ctx.tool.name, pointer, message, hint };
}

/** Splits `maxResults`, `timeout_ms`, `TTL-seconds` into lower-case words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}
