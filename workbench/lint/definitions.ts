/**
 * Finds the tool definitions in a document, whatever shape it comes in:
 * - an array of definitions;
 * - `{"tools": [...]}`, which is also the shape of an MCP `tools/list` result;
 * - a single definition (source listing 1 is one).
 * A definition's argument schema may sit under `parameters` (OpenAI, our catalog),
 * `inputSchema` (MCP), `input_schema` (Anthropic) or `parametersJsonSchema` (Gemini); OpenAI's
 * `{"type": "function", "function": {...}}` wrapper is unwrapped, and Gemini's
 * `{"functionDeclarations": [...]}` (alone, or as entries of `tools`) is read as a list.
 *
 * A provider's built-in tool (`{"type": "text_editor_20250124", "name": …}`, OpenAI's
 * `{"type": "web_search_preview"}`) carries no argument schema because the provider defines it:
 * it is returned as skipped, with its type, rather than reported as a tool without a schema.
 *
 * Input that is not a tool list at all is an InputError (the CLI exits 2); a definition that
 * is merely weak is the linter's business, not this module's.
 */
import { InputError } from '../../core/errors';
import { appendPointer } from './pointer';
import type { ToolDefinition } from './types';

export const SCHEMA_KEYS = ['parameters', 'inputSchema', 'input_schema', 'parametersJsonSchema'] as const;

/** A definition the linter did not read, and why. */
export interface SkippedDefinition {
  name: string;
  pointer: string;
  reason: string;
}

export interface ExtractedDefinitions {
  definitions: ToolDefinition[];
  skipped: SkippedDefinition[];
}

export function extractDefinitions(document: unknown): ToolDefinition[] {
  return extractAll(document).definitions;
}

/** The definitions in a document, and the entries it skipped (provider built-ins). */
export function extractAll(document: unknown): ExtractedDefinitions {
  const out: ExtractedDefinitions = { definitions: [], skipped: [] };
  if (Array.isArray(document)) {
    document.forEach((d, i) => entryAt(d, appendPointer('', i), `[${i}]`, out));
    return out;
  }
  if (isObject(document)) {
    if ('tools' in document) {
      const tools = document.tools;
      if (!Array.isArray(tools)) throw new InputError('tools', `be an array of tool definitions (got ${kind(tools)})`);
      tools.forEach((d, i) => entryAt(d, appendPointer('', 'tools', i), `tools[${i}]`, out));
      return out;
    }
    if ('functionDeclarations' in document) {
      functionDeclarations(document, '', '', out);
      return out;
    }
    if ('name' in document || typeof document.type === 'string') {
      entryAt(document, '', '', out);
      return out;
    }
  }
  throw new InputError(
    'the document',
    `be an array of tool definitions, {"tools": [...]} (e.g. an MCP tools/list result), {"functionDeclarations": [...]} or one definition with a name (got ${kind(document)})`,
  );
}

function entryAt(value: unknown, pointer: string, field: string, out: ExtractedDefinitions): void {
  if (isObject(value) && 'functionDeclarations' in value && !('name' in value)) {
    functionDeclarations(value, pointer, field, out);
    return;
  }
  const builtIn = builtInType(value);
  if (builtIn !== undefined) {
    const name = isObject(value) && typeof value.name === 'string' && value.name.length > 0 ? value.name : builtIn;
    out.skipped.push({
      name,
      pointer,
      reason: `provider built-in tool (type ${JSON.stringify(builtIn)}): its arguments are defined by the provider`,
    });
    return;
  }
  out.definitions.push(definitionAt(value, pointer, field));
}

/** Gemini: `{"functionDeclarations": [{name, description, parameters | parametersJsonSchema}]}`. */
function functionDeclarations(value: Record<string, unknown>, pointer: string, field: string, out: ExtractedDefinitions): void {
  const list = value.functionDeclarations;
  const at = field ? `${field}.functionDeclarations` : 'functionDeclarations';
  if (!Array.isArray(list)) throw new InputError(at, `be an array of function declarations (got ${kind(list)})`);
  list.forEach((d, i) => out.definitions.push(definitionAt(d, appendPointer(pointer, 'functionDeclarations', i), `${at}[${i}]`)));
}

/** The `type` of a provider built-in tool: a type other than "function", and no argument schema of its own. */
function builtInType(value: unknown): string | undefined {
  if (!isObject(value) || typeof value.type !== 'string' || value.type === 'function') return undefined;
  if (SCHEMA_KEYS.some((k) => k in value)) return undefined;
  return value.type;
}

function definitionAt(value: unknown, pointer: string, field: string, wrapper?: Record<string, unknown>): ToolDefinition {
  const sub = (key: string) => (field ? `${field}.${key}` : key);
  if (!isObject(value)) throw new InputError(field, `be an object (a tool definition; got ${kind(value)})`);
  // OpenAI chat-completions style: {"type": "function", "function": {name, description, parameters}}.
  if (value.type === 'function' && isObject(value.function)) {
    return definitionAt(value.function, appendPointer(pointer, 'function'), sub('function'), value);
  }
  const { name, description } = value;
  if (typeof name !== 'string' || name.length === 0) throw new InputError(sub('name'), `be a non-empty string (got ${kind(name)})`);
  const key = SCHEMA_KEYS.find((k) => k in value);
  const schema = key === undefined ? undefined : value[key];
  const schemaPointer = key === undefined ? pointer : appendPointer(pointer, key);
  let dialect: ToolDefinition['dialect'];
  if (isObject(schema) && typeof schema.$schema === 'string') {
    dialect = { uri: schema.$schema, pointer: appendPointer(schemaPointer, '$schema') };
  } else if (typeof value.$schema === 'string') {
    dialect = { uri: value.$schema, pointer: appendPointer(pointer, '$schema') };
  }
  return {
    name,
    published: wrapper ?? value,
    description: typeof description === 'string' ? description : undefined,
    schema,
    schemaPointer,
    dialect,
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v === undefined) return 'nothing';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}
