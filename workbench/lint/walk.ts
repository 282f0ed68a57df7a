/** Every sub-schema of a JSON Schema, in document order, with its pointer and how it was reached. */
import { InputError } from '../../core/errors';
import { appendPointer } from './pointer';

/**
 * Sub-schemas nested deeper than this are refused (an InputError: the CLI exits 2). Real tool
 * schemas nest a dozen levels at most; the walker recurses once per level, and so does ajv's
 * meta-schema check, which overflowed the stack (and came out as a false dialect error) from
 * about 650 levels. The argument schema itself is level 1.
 */
export const MAX_SCHEMA_DEPTH = 64;

export type SchemaRole =
  /** The argument schema itself. */
  | 'root'
  /** The schema of a named property (`properties/<name>`): what a model fills in by name. */
  | 'property'
  /** A value schema reached through `items`, `prefixItems`, `additionalProperties`, … */
  | 'value'
  /** A branch of `anyOf`/`oneOf`/`allOf`, or `then`/`else`: adds to its parent. */
  | 'branch'
  /** A definition under `$defs`/`definitions`, reachable through `$ref`. */
  | 'definition';

export interface SchemaNode {
  /** An object schema or a boolean schema (`true` accepts anything, `false` nothing). */
  node: Record<string, unknown> | boolean;
  pointer: string;
  role: SchemaRole;
  /** The property name when `role` is `property`. */
  name?: string;
}

const VALUE_KEYS = ['items', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'contains', 'propertyNames'] as const;
const BRANCH_LIST_KEYS = ['anyOf', 'oneOf', 'allOf'] as const;
// Not `not` and `if`: they test values rather than describe them (`not: {type: "string"}` is no
// unbounded string), so the rules have nothing to say about them; the meta-schema still checks them.
const BRANCH_KEYS = ['then', 'else'] as const;
const MAP_KEYS = ['patternProperties', 'dependentSchemas'] as const;

export function* walkSchema(schema: unknown, pointer: string, role: SchemaRole = 'root', name?: string, depth = 1): Generator<SchemaNode> {
  if (depth > MAX_SCHEMA_DEPTH && (typeof schema === 'boolean' || isObject(schema))) {
    // The pointer of a deep node is long: its start and its end say where.
    const at =
      pointer.length <= 160
        ? pointer
        : `${pointer.slice(0, pointer.lastIndexOf('/', 80))}…${pointer.slice(pointer.indexOf('/', pointer.length - 60))}`;
    throw new InputError(at || '/', `nest sub-schemas at most ${MAX_SCHEMA_DEPTH} levels deep (settle lint's limit)`);
  }
  if (typeof schema === 'boolean') {
    yield { node: schema, pointer, role, ...(name === undefined ? {} : { name }) };
    return;
  }
  if (!isObject(schema)) return;
  yield { node: schema, pointer, role, ...(name === undefined ? {} : { name }) };
  if (isObject(schema.properties)) {
    for (const [key, sub] of Object.entries(schema.properties))
      yield* walkSchema(sub, appendPointer(pointer, 'properties', key), 'property', key, depth + 1);
  }
  for (const key of MAP_KEYS) {
    if (!isObject(schema[key])) continue;
    for (const [k, sub] of Object.entries(schema[key]))
      yield* walkSchema(sub, appendPointer(pointer, key, k), 'value', undefined, depth + 1);
  }
  for (const key of VALUE_KEYS) yield* walkSchema(schema[key], appendPointer(pointer, key), 'value', undefined, depth + 1);
  if (Array.isArray(schema.prefixItems)) {
    for (const [i, sub] of schema.prefixItems.entries())
      yield* walkSchema(sub, appendPointer(pointer, 'prefixItems', i), 'value', undefined, depth + 1);
  }
  // Draft-07 tuple form (`items: [...]`): not valid 2020-12 (the meta-schema rule says so), but
  // its members still deserve the other rules.
  if (Array.isArray(schema.items)) {
    for (const [i, sub] of schema.items.entries())
      yield* walkSchema(sub, appendPointer(pointer, 'items', i), 'value', undefined, depth + 1);
  }
  for (const key of BRANCH_LIST_KEYS) {
    if (!Array.isArray(schema[key])) continue;
    for (const [i, sub] of (schema[key] as unknown[]).entries())
      yield* walkSchema(sub, appendPointer(pointer, key, i), 'branch', undefined, depth + 1);
  }
  for (const key of BRANCH_KEYS) yield* walkSchema(schema[key], appendPointer(pointer, key), 'branch', undefined, depth + 1);
  for (const key of ['$defs', 'definitions'] as const) {
    if (!isObject(schema[key])) continue;
    for (const [k, sub] of Object.entries(schema[key]))
      yield* walkSchema(sub, appendPointer(pointer, key, k), 'definition', undefined, depth + 1);
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The JSON types a schema declares (`type: "x"` or `type: [...]`); empty when it declares none. */
export function declaredTypes(schema: Record<string, unknown>): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  return [];
}

/** An object schema: declares type object, or declares properties without a type. */
export function isObjectSchema(schema: Record<string, unknown>): boolean {
  const types = declaredTypes(schema);
  return types.includes('object') || (types.length === 0 && isObject(schema.properties));
}

/** A schema that pins its value: `const`, or an `enum` (of any length — a finite set is bounded). */
export function isEnumerated(schema: Record<string, unknown>): boolean {
  return 'const' in schema || (Array.isArray(schema.enum) && schema.enum.length > 0);
}
