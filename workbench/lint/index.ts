/**
 * The tool-definition linter (docs/design.md#typed-tool-interface): the five schema rules of the source text and the
 * anti-patterns of its table, over definitions in any of the usual formats. Pure: no I/O.
 */
import { assertJsonDepth } from '../../core/json-text';
import { extractAll, type SkippedDefinition } from './definitions';
import type { RuleContext } from './rules/context';
import { checkBounds } from './rules/bounds';
import { checkDialect } from './rules/dialect';
import { checkObjects, checkSchemaPresent } from './rules/objects';
import { checkRequired, checkRequiredInToolDescription } from './rules/required';
import { checkUnions } from './rules/unions';
import { checkUnits } from './rules/units';
import { checkWholeFileRewrite } from './rules/whole-file';
import type { Finding, ToolDefinition } from './types';
import { checkRefs } from './rules/refs';
import { walkSchema } from './walk';
import { reachOf } from './reach';

export type { Finding, RuleId, Severity, ToolDefinition } from './types';
export { RULE_IDS } from './types';
export { extractAll, extractDefinitions, type SkippedDefinition } from './definitions';
export { MAX_SCHEMA_DEPTH } from './walk';

/**
 * Documents nested deeper than this are refused before any rule runs: ajv's meta-schema check
 * recurses through keywords the walker does not follow (`not`, `if`, `const` values).
 */
export const MAX_LINT_DOCUMENT_DEPTH = 256;

const NODE_RULES = [checkObjects, checkRequired, checkBounds, checkUnits, checkUnions];

/**
 * Findings for each definition in order: schema-level first, then node by node, then tool-level.
 * Rules look only at what a call's arguments can reach through `$ref` (workbench/lint/reach.ts); the
 * definitions nothing reaches get one informational note for the whole catalog, last.
 */
export function lintDefinitions(definitions: ToolDefinition[]): Finding[] {
  const out: Finding[] = [];
  const unreachable: { tool: string; pointer: string }[] = [];
  for (const tool of definitions) {
    const ctx: RuleContext = { tool };
    // Depth first: a schema past MAX_SCHEMA_DEPTH is an InputError before ajv or any rule recurses.
    for (const _ of walkSchema(tool.schema, tool.schemaPointer));
    const { reachable, unreachableDefinitions } = reachOf(tool.schema, tool.schemaPointer);
    for (const pointer of unreachableDefinitions) unreachable.push({ tool: tool.name, pointer });
    const refs = checkRefs(ctx).filter((f) => reachable.has(f.pointer.replace(/\/\$ref$/, '')));
    out.push(...checkSchemaPresent(ctx), ...checkDialect(ctx), ...refs);
    for (const node of walkSchema(tool.schema, tool.schemaPointer)) {
      if (!reachable.has(node.pointer)) continue;
      for (const rule of NODE_RULES) out.push(...rule(node, ctx));
    }
    out.push(...checkRequiredInToolDescription(ctx, out), ...checkWholeFileRewrite(ctx));
  }
  if (unreachable.length > 0) out.push(unreachableNote(unreachable));
  return out;
}

/** One note for the catalog: how many definitions nothing reaches, in how many tools, the first of them. */
function unreachableNote(unreachable: { tool: string; pointer: string }[]): Finding {
  const tools = new Set(unreachable.map((u) => u.tool));
  const first = unreachable[0]!;
  return {
    severity: 'info',
    rule: 'unreachable-definitions',
    tool: first.tool,
    pointer: first.pointer,
    message: `${unreachable.length} definition${unreachable.length === 1 ? '' : 's'} in ${tools.size} tool${tools.size === 1 ? '' : 's'} no argument reaches through $ref (not linted; the first is here)`,
    hint: 'remove the definitions a tool does not use, so its schema carries only what its arguments need',
  };
}

/** Lints a parsed document (array, `{"tools": [...]}` or one definition). Throws InputError on a non-tool-list. */
export function lintDocument(document: unknown): { tools: number; findings: Finding[]; skipped: SkippedDefinition[] } {
  assertJsonDepth(document, 'the document', MAX_LINT_DOCUMENT_DEPTH);
  const { definitions, skipped } = extractAll(document);
  return { tools: definitions.length, findings: lintDefinitions(definitions), skipped };
}

/** One line per finding: severity, rule, tool, pointer, message, fix hint. */
export function formatFinding(f: Finding): string {
  return `${f.severity.padEnd(7)} ${f.rule.padEnd(20)} ${f.tool}  ${f.pointer || '""'}  ${f.message}; fix: ${f.hint}`;
}

export function hasErrors(findings: Finding[]): boolean {
  return findings.some((f) => f.severity === 'error');
}
