/**
 * Finds the tool definitions in a document, whatever shape it comes in:
 * - an array of definitions;
 * - `{"tools": [...]}`, which is also the shape of an MCP `tools/list` result;
 * - a single definition (source listing 1 is one).
 * A definition's argument schema may sit under `parameters` (OpenAI, our catalog),
 * `inputSchema` (MCP) or `input_schema` (Anthropic); OpenAI's `{"type": "function",
 * "function": {...}}` wrapper is unwrapped.
 *
 * Input that is not a tool list at all is an InputError (the CLI exits 2); a definition that
 * is merely weak is the linter's business, not this module's.
 */
import { InputError } from '../errors';
import { appendPointer } from './pointer';
import type { ToolDefinition } from './types';

export const SCHEMA_KEYS = ['parameters', 'inputSchema', 'input_schema'] as const;

export function extractDefinitions(document: unknown): ToolDefinition[] {
  if (Array.isArray(document)) return document.map((d, i) => definitionAt(d, appendPointer('', i), `[${i}]`));
  if (isObject(document)) {
    if ('tools' in document) {
      const tools = document.tools;
      if (!Array.isArray(tools)) throw new InputError('tools', `be an array of tool definitions (got ${kind(tools)})`);
      return tools.map((d, i) => definitionAt(d, appendPointer('', 'tools', i), `tools[${i}]`));
    }
    if ('name' in document) return [definitionAt(document, '', '')];
  }
  throw new InputError(
    'the document',
    `be an array of tool definitions, {"tools": [...]} (e.g. an MCP tools/list result) or one definition with a name (got ${kind(document)})`,
  );
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
