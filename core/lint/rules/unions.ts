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
  const out = [];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = n.node[key];
    if (!Array.isArray(list) || list.length < 2) continue;
    const branches = list.map((b) => deref(ctx.tool.schema, b));
    if (distinctTypes(branches) || discriminator(branches) !== null) continue;
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

function distinctTypes(branches: unknown[]): boolean {
  const types = branches.map((b) => (isObject(b) ? declaredTypes(b) : []));
  if (!types.every((t) => t.length === 1)) return false;
  // integer values are numbers too: an integer branch and a number branch overlap.
  const normalised = types.map((t) => (t[0] === 'integer' ? 'number' : t[0]));
  return new Set(normalised).size === normalised.length;
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
