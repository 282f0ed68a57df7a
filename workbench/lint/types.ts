/** The vocabulary of the tool-definition linter: what a finding is and what it is about. */

/**
 * `error`: the definition breaks a schema rule; `warning`: an anti-pattern worth a second look;
 * `info`: a note that is no defect of what a call can send (never fails the lint).
 */
export type Severity = 'error' | 'warning' | 'info';

export const RULE_IDS = [
  // The five schema rules of the source text (docs/design.md#typed-tool-interface).
  'closed-objects',
  'required-fields',
  'bounded-types',
  'explicit-units',
  'explicit-counts',
  'index-base',
  'discriminated-unions',
  // Anti-patterns.
  'untyped-bag',
  'whole-file-rewrite',
  'json-schema-2020-12',
  // Every $ref resolves inside the schema.
  'resolvable-refs',
  // Definitions no argument can reach through $ref: one note per catalog, never linted.
  'unreachable-definitions',
] as const;

export type RuleId = (typeof RULE_IDS)[number];

export interface Finding {
  severity: Severity;
  rule: RuleId;
  /** The tool the finding is about, as named by its definition. */
  tool: string;
  /** RFC 6901 pointer into the linted document (the file, or the MCP `tools/list` result). */
  pointer: string;
  /** What is wrong, in one sentence. */
  message: string;
  /** How to fix it, in one sentence. */
  hint: string;
}

/** One tool definition found in a document, whatever the format it came in. */
export interface ToolDefinition {
  name: string;
  /** The definition object exactly as it appears in the document (OpenAI's wrapper included). */
  published: Record<string, unknown>;
  description: string | undefined;
  /** The argument schema (`parameters`, `inputSchema` or `input_schema`), or undefined if absent. */
  schema: unknown;
  /** Pointer to `schema` in the document (to the definition itself when the schema is absent). */
  schemaPointer: string;
  /**
   * The `$schema` that governs `schema`: its own, or one written next to it on the definition
   * (source listing 1 puts `$schema` beside `parameters`), with the pointer where it was found.
   */
  dialect: { uri: string; pointer: string } | undefined;
}
