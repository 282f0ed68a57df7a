/**
 * Anti-pattern: a schema that is not valid JSON Schema draft 2020-12. Checked against the
 * 2020-12 meta-schema (ajv's `ajv/dist/2020.js`) plus what the meta-schema leaves to format
 * validation: every `pattern` (and `patternProperties` key) must compile as an ECMA-262
 * regular expression with the `u` flag, as JSON Schema validators compile it. A schema that
 * declares another dialect (`$schema`: draft-07, as many MCP servers publish) is reported and
 * then still checked as 2020-12, since that is how a 2020-12 consumer will read it.
 */
import Ajv2020 from 'ajv/dist/2020.js';
import type { ErrorObject } from 'ajv';
import { appendPointer } from '../pointer';
import { walkSchema, isObject } from '../walk';
import { finding, type ToolRule } from './context';

export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

// Meta-schema validation only: no formats, no strict-mode complaints about vendor keywords
// (`x-settle-level` and friends are legal in 2020-12).
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });

export const checkDialect: ToolRule = (ctx) => {
  const { tool } = ctx;
  if (tool.schema === undefined) return []; // reported as an untyped bag
  if (typeof tool.schema !== 'boolean' && !isObject(tool.schema)) {
    const got = tool.schema === null ? 'null' : Array.isArray(tool.schema) ? 'an array' : `a ${typeof tool.schema}`;
    return [
      finding(
        ctx,
        'error',
        'json-schema-2020-12',
        tool.schemaPointer,
        `the argument schema is ${got}, not a JSON Schema (an object or a boolean): its arguments are not checked`,
        'publish an object schema with typed properties and "additionalProperties": false',
      ),
    ];
  }
  const out = [];
  if (tool.dialect && tool.dialect.uri.replace(/#$/, '') !== DRAFT_2020_12) {
    out.push(
      finding(
        ctx,
        'error',
        'json-schema-2020-12',
        tool.dialect.pointer,
        `the schema declares ${tool.dialect.uri}, not JSON Schema draft 2020-12`,
        `generate draft 2020-12 and set "$schema": "${DRAFT_2020_12}"`,
      ),
    );
  }
  const schema = isObject(tool.schema) ? withoutRootDialect(tool.schema) : tool.schema;
  let valid: boolean;
  try {
    valid = ajv.validateSchema(schema) as boolean;
  } catch (err) {
    // e.g. a nested $schema naming a meta-schema ajv does not know.
    return [
      ...out,
      finding(
        ctx,
        'error',
        'json-schema-2020-12',
        tool.schemaPointer,
        `the schema cannot be checked as draft 2020-12: ${(err as Error).message}`,
        'publish a self-contained draft 2020-12 schema',
      ),
    ];
  }
  if (!valid) {
    for (const e of mostSpecificPerPath(ajv.errors ?? [])) {
      const allowed = Array.isArray(e.params.allowedValues) ? ` (${e.params.allowedValues.join(', ')})` : '';
      out.push(
        finding(
          ctx,
          'error',
          'json-schema-2020-12',
          tool.schemaPointer + e.instancePath,
          `not valid JSON Schema 2020-12: ${e.instancePath ? e.instancePath.split('/').pop() : 'the schema'} ${e.message ?? 'is invalid'}${allowed}`,
          'fix the keyword as the 2020-12 meta-schema defines it',
        ),
      );
    }
  }
  for (const { node, pointer } of walkSchema(tool.schema, tool.schemaPointer)) {
    if (typeof node === 'boolean') continue;
    if (typeof node.pattern === 'string') {
      const problem = regexProblem(node.pattern);
      if (problem)
        out.push(
          finding(
            ctx,
            'error',
            'json-schema-2020-12',
            appendPointer(pointer, 'pattern'),
            `pattern is not a valid regular expression: ${problem}`,
            'write an ECMA-262 regular expression that compiles with the u flag',
          ),
        );
    }
    if (isObject(node.patternProperties)) {
      for (const key of Object.keys(node.patternProperties)) {
        const problem = regexProblem(key);
        if (problem)
          out.push(
            finding(
              ctx,
              'error',
              'json-schema-2020-12',
              appendPointer(pointer, 'patternProperties', key),
              `patternProperties key is not a valid regular expression: ${problem}`,
              'write an ECMA-262 regular expression that compiles with the u flag',
            ),
          );
      }
    }
  }
  return out;
};

function withoutRootDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}

/** ajv reports an `anyOf` failure and each alternative; keep one error per place, the most telling. */
function mostSpecificPerPath(errors: ErrorObject[]): ErrorObject[] {
  const byPath = new Map<string, ErrorObject>();
  for (const e of errors) {
    const seen = byPath.get(e.instancePath);
    if (!seen || (isComposite(seen) && !isComposite(e))) byPath.set(e.instancePath, e);
  }
  return [...byPath.values()];
}

function isComposite(e: ErrorObject): boolean {
  return e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if' || e.keyword === '$ref' || e.keyword === '$dynamicRef';
}

function regexProblem(source: string): string | null {
  try {
    new RegExp(source, 'u');
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
