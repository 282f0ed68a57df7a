/**
 * Every `$ref` must resolve inside the schema to a schema. A dangling reference
 * (`#/$defs/missing`) makes a validator throw or, in lenient ones, accept anything; a chain of
 * `$ref`s that comes back to itself (`a → b → a`, a root `{"$ref": "#"}`) never reaches a schema
 * at all; a reference outside the document cannot be followed by a model that is given only the
 * tool definition. Recursion through content (a tree whose `items` refer to `#`) is fine.
 */
import { appendPointer, resolveLocalRef } from '../pointer';
import { isObject, walkSchema } from '../walk';
import { finding, type ToolRule } from './context';

export const checkRefs: ToolRule = (ctx) => {
  const { tool } = ctx;
  const root = tool.schema;
  const anchors = new Map<string, unknown>();
  for (const { node } of walkSchema(root, tool.schemaPointer)) {
    if (isObject(node) && typeof node.$anchor === 'string') anchors.set(node.$anchor, node);
  }
  const resolve = (ref: string): unknown => (/^#[A-Za-z_][\w.-]*$/.test(ref) ? anchors.get(ref.slice(1)) : resolveLocalRef(root, ref));
  const out = [];
  for (const { node, pointer } of walkSchema(root, tool.schemaPointer)) {
    if (!isObject(node) || typeof node.$ref !== 'string') continue;
    const at = appendPointer(pointer, '$ref');
    const ref = node.$ref;
    if (!ref.startsWith('#')) {
      out.push(
        finding(
          ctx,
          'error',
          'resolvable-refs',
          at,
          `$ref ${JSON.stringify(ref)} points outside the document: a model given this definition cannot follow it`,
          'inline the referenced schema, or put it under "$defs" and refer to it as "#/$defs/<name>"',
        ),
      );
      continue;
    }
    // Follow the chain of $refs; it must reach a schema that is not itself another hop of the loop.
    const seen = [ref];
    let target = resolve(ref);
    let problem: string | null = null;
    for (;;) {
      if (target === undefined) {
        problem =
          seen.length === 1
            ? `$ref ${JSON.stringify(ref)} does not resolve: nothing in the schema is at that location`
            : `$ref ${JSON.stringify(ref)} does not resolve: it leads through ${seen.join(' → ')}, which points at nothing`;
        break;
      }
      if (typeof target !== 'boolean' && !isObject(target)) {
        problem = `$ref ${JSON.stringify(ref)} resolves to a ${Array.isArray(target) ? 'list' : typeof target}, not a schema`;
        break;
      }
      if (!isObject(target) || typeof target.$ref !== 'string') break;
      const next = target.$ref;
      if (seen.includes(next) || target === node) {
        problem = `$ref ${JSON.stringify(ref)} is part of a cycle of $refs that never reaches a schema: ${[...seen, next].join(' → ')}`;
        break;
      }
      if (!next.startsWith('#')) break; // reported where it is written
      seen.push(next);
      target = resolve(next);
    }
    if (problem) {
      out.push(
        finding(
          ctx,
          'error',
          'resolvable-refs',
          at,
          problem,
          'point the $ref at a definition that exists (e.g. under "$defs") and is a schema',
        ),
      );
    }
  }
  return out;
};
