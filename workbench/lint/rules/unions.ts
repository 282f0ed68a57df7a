/**
 * Rule 5: a discriminator on every union. Without one a model mixes fields of several branches
 * and the validator cannot say which branch failed. A union is discriminated when every branch
 * is an object that requires one common property pinned to a value of its own (`const`, or a
 * one-value `enum`). Branches that differ by JSON type (`string` | `null`) are already told
 * apart by the value itself and need no tag.
 */
import { appendPointer, resolveLocalRef } from '../pointer';
import { declaredTypes, isObject, isObjectSchema } from '../walk';
import { finding, type NodeRule } from './context';

export const checkUnions: NodeRule = (n, ctx) => {
  if (typeof n.node === 'boolean') return [];
  const out = [...flattenedUnion(n.node, n.pointer, ctx)];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = n.node[key];
    if (!Array.isArray(list) || list.length < 2) continue;
    // A branch written twice is one branch (a redundancy, not an ambiguity between branches).
    const branches = uniqueBranches(list.map((b) => deref(ctx.tool.schema, b)));
    if (branches.length < 2 || distinctTypes(branches, ctx.tool.schema) || discriminator(branches) !== null) continue;
    // A branch that takes any object makes the others moot: that is a bag (untyped-bag says so), not a missing tag.
    if (branches.some(isCatchAllObject)) continue;
    // Only objects can carry a tag: overlapping strings (a branch name or any ref) are a bounds question.
    const types = branches.map((b) => jsonTypes(b, ctx.tool.schema));
    if (types.every((t) => t.length > 0 && !t.includes('object'))) continue;
    out.push(
      finding(
        ctx,
        'error',
        'discriminated-unions',
        appendPointer(n.pointer, key),
        `${key} has no discriminator: no property that every branch requires with a distinct const`,
        'give every branch a required tag property with its own value, e.g. "kind": {"const": "file"} and "kind": {"const": "dir"}',
      ),
    );
  }
  return out;
};

/** Names that make an enum a mode selector. */
const SELECTOR_NAMES = new Set(['command', 'method', 'action', 'operation', 'op', 'mode', 'subcommand', 'kind', 'type', 'verb', 'task']);

/**
 * A flattened union: one object whose required `command`/`method`/`action` enum decides which of
 * its other fields apply — other fields' descriptions tie them to particular values ("Required
 * for 'run_workflow' method", "parameter of `create` command"). A model cannot see which fields
 * go with which value, and the validator cannot refuse a field sent with the wrong one. The
 * finding shows the tagged `oneOf` the schema implies.
 */
function flattenedUnion(s: Record<string, unknown>, pointer: string, ctx: Parameters<NodeRule>[1]) {
  if (!isObjectSchema(s) || !isObject(s.properties)) return [];
  const properties = s.properties;
  const required = Array.isArray(s.required) ? s.required : [];
  const root = ctx.tool.schema;
  for (const [selector, sub] of Object.entries(properties)) {
    if (!SELECTOR_NAMES.has(selector.toLowerCase()) || !required.includes(selector) || !isObject(sub)) continue;
    // The enum may sit in the property itself or in a branch of its anyOf/oneOf (`Optional[Literal[…]]`).
    const values = [...new Set(alternatives(root, sub).flatMap((a): unknown[] => (Array.isArray(a.enum) ? a.enum : [])))].filter(
      (v): v is string => typeof v === 'string',
    );
    if (values.length < 2) continue;
    // Which other fields are tied to which values: by a description (the field's own, or its
    // branches'), or, when every value names a field of its own, by that name.
    const eachNamesAField = values.every((v) => v !== selector && Object.hasOwn(properties, v));
    const tied = new Map<string, string[]>();
    for (const [name, other] of Object.entries(properties)) {
      if (name === selector || !isObject(other)) continue;
      const text = alternatives(root, other)
        .map((a) => (typeof a.description === 'string' ? a.description : ''))
        .join(' ');
      const mentioned = values.filter((v) => mentionsValue(text, v, selector) || (eachNamesAField && v === name));
      if (mentioned.length > 0) tied.set(name, mentioned);
    }
    if (tied.size === 0) continue;
    const fields = [...tied.keys()];
    const example = values.slice(0, 2).map((v) => {
      const own = fields.filter((f) => tied.get(f)!.includes(v));
      return `{"properties": {${[`${JSON.stringify(selector)}: {"const": ${JSON.stringify(v)}}`, ...own.map((f) => `${JSON.stringify(f)}: …`)].join(', ')}}, "required": [${[selector, ...own].map((f) => JSON.stringify(f)).join(', ')}]}`;
    });
    return [
      finding(
        ctx,
        'error',
        'discriminated-unions',
        appendPointer(pointer, 'properties', selector),
        `${JSON.stringify(selector)} selects one of ${values.length} operations whose fields differ (${fields.join(', ')} apply only to some), but the schema is one flat object: a model cannot see which fields go with which ${selector}, and the validator cannot refuse a wrong combination`,
        `make it a tagged union, one branch per ${selector}: {"oneOf": [${example.join(', ')}, …]}`,
      ),
    ];
  }
  return [];
}

/** The description ties the field to this enum value: quoted, back-ticked, or followed by the selector's name. */
function mentionsValue(description: string, value: string, selector: string): boolean {
  const v = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(
    `['"\`]${v}['"\`]|\\b${v}\\s+${selector}s?\\b|\\b${selector}s?\\s*[:=]\\s*['"\`]?${v}\\b|\\b(for|with|when|on) (the )?${v}\\b(?![-_])`,
    'i',
  ).test(description);
}

/** The name of a property that tags every branch with its own value, or null. */
export function discriminator(branches: unknown[]): string | null {
  if (!branches.every((b) => isObject(b) && isObjectSchema(b) && isObject(b.properties))) return null;
  const objects = branches as { properties: Record<string, unknown>; required?: unknown }[];
  const candidates = Object.keys(objects[0]!.properties);
  for (const name of candidates) {
    const values = objects.map((b) => {
      const required = Array.isArray(b.required) && b.required.includes(name);
      const prop = b.properties[name];
      return required && isObject(prop) ? pinnedValue(prop) : undefined;
    });
    if (values.every((v) => v !== undefined) && new Set(values).size === values.length) return name;
  }
  return null;
}

/** The single value a schema allows, as JSON text, or undefined. */
function pinnedValue(schema: Record<string, unknown>): string | undefined {
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum) && schema.enum.length === 1) return JSON.stringify(schema.enum[0]);
  return undefined;
}

/**
 * The branches accept values of pairwise different JSON types (`string` | `object`, `null` |
 * `array`): the value itself says which branch it is. A branch's types are its declared `type`,
 * else what its keywords imply (`properties` → object, `items` → array, `const`/`enum` → the
 * values' types), through `$ref`s and single-branch `allOf`s. An integer is a number too.
 */
function distinctTypes(branches: unknown[], root: unknown): boolean {
  const seen = new Set<string>();
  for (const b of branches) {
    const types = jsonTypes(deref(root, b), root);
    if (types.length === 0) return false;
    for (const t of new Set(types)) {
      if (seen.has(t)) return false;
      seen.add(t);
    }
  }
  return true;
}

function jsonTypes(schema: unknown, root: unknown, hops = 0): string[] {
  if (!isObject(schema) || hops > 16) return [];
  const declared = declaredTypes(schema);
  if (declared.length > 0) return declared.map((t) => (t === 'integer' ? 'number' : t));
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) return jsonTypes(deref(root, schema.allOf[0]), root, hops + 1);
  // A union of its own (`{"oneOf": [objectA, objectB]}` behind a $ref): the types of its branches.
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = schema[key];
    if (!Array.isArray(list) || list.length === 0) continue;
    const each = list.map((b) => jsonTypes(deref(root, b), root, hops + 1));
    return each.some((t) => t.length === 0) ? [] : [...new Set(each.flat())];
  }
  if ('const' in schema) return [valueType(schema.const)];
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum.map(valueType);
  if (['properties', 'required', 'additionalProperties', 'patternProperties'].some((k) => k in schema)) return ['object'];
  if (['items', 'prefixItems', 'minItems', 'maxItems'].some((k) => k in schema)) return ['array'];
  return [];
}

/** `{"type": "object"}` or `{"type": "object", "additionalProperties": true}`: any object passes. */
function isCatchAllObject(b: unknown): boolean {
  if (!isObject(b) || !isObjectSchema(b)) return false;
  const declares = ['properties', 'patternProperties', 'required', 'anyOf', 'oneOf', 'allOf', '$ref', 'const', 'enum'].some((k) => k in b);
  return !declares && (b.additionalProperties === undefined || b.additionalProperties === true);
}

function valueType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

function uniqueBranches(branches: unknown[]): unknown[] {
  const seen = new Set<string>();
  return branches.filter((b) => {
    const text = JSON.stringify(b);
    if (seen.has(text)) return false;
    seen.add(text);
    return true;
  });
}

/** A schema and the branches of its anyOf/oneOf, through `$ref`s: where its enum and descriptions may be written. */
function alternatives(root: unknown, schema: Record<string, unknown>): Record<string, unknown>[] {
  const own = deref(root, schema);
  const out = isObject(own) ? [schema, own] : [schema];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = isObject(own) ? own[key] : undefined;
    if (!Array.isArray(list)) continue;
    for (const b of list) {
      const branch = deref(root, b);
      if (isObject(branch)) out.push(branch);
    }
  }
  return out;
}

function deref(root: unknown, schema: unknown): unknown {
  let current = schema;
  for (let hops = 0; hops < 16 && isObject(current) && typeof current.$ref === 'string'; hops++) {
    const target = resolveLocalRef(root, current.$ref);
    if (target === undefined) return current;
    current = target;
  }
  return current;
}
