/**
 * What a call's arguments can reach: the argument schema without its definitions, plus every
 * definition a reachable `$ref` leads to, transitively. A catalog that copies the same `$defs`
 * into every tool would otherwise have each defect inside them reported once per tool, in tools
 * whose arguments never use them; rules look only at reachable sub-schemas.
 */
import { resolveLocalRef } from './pointer';
import { isObject, walkSchema } from './walk';

export interface Reach {
  /** Pointers of the sub-schemas a call's arguments can reach. */
  reachable: Set<string>;
  /** Pointers of definitions (`$defs`/`definitions` entries) no reachable `$ref` leads to. */
  unreachableDefinitions: string[];
}

export function reachOf(schema: unknown, schemaPointer: string): Reach {
  const reachable = new Set<string>();
  const anchors = new Map<string, { node: unknown; pointer: string }>();
  for (const n of walkSchema(schema, schemaPointer)) {
    if (isObject(n.node) && typeof n.node.$anchor === 'string') anchors.set(`#${n.node.$anchor}`, n);
  }
  const queue: { node: unknown; pointer: string }[] = [{ node: schema, pointer: schemaPointer }];
  const queued = new Set([schemaPointer]);
  while (queue.length > 0) {
    const start = queue.shift()!;
    const skipped: string[] = [];
    for (const n of walkSchema(start.node, start.pointer)) {
      if (skipped.some((p) => n.pointer.startsWith(p))) continue;
      if (n.role === 'definition') {
        skipped.push(`${n.pointer}/`);
        if (!queued.has(n.pointer)) continue; // entered only through a $ref
      }
      reachable.add(n.pointer);
      if (!isObject(n.node) || typeof n.node.$ref !== 'string' || !n.node.$ref.startsWith('#')) continue;
      const ref = n.node.$ref;
      const anchored = anchors.get(ref);
      const target = anchored ? anchored.node : resolveLocalRef(schema, ref);
      const pointer = anchored ? anchored.pointer : schemaPointer + decodeRef(ref);
      if (target === undefined || queued.has(pointer)) continue;
      queued.add(pointer);
      queue.push({ node: target, pointer });
    }
  }
  const unreachableDefinitions: string[] = [];
  for (const n of walkSchema(schema, schemaPointer)) {
    if (n.role === 'definition' && !reachable.has(n.pointer) && !unreachableDefinitions.some((p) => n.pointer.startsWith(`${p}/`))) {
      unreachableDefinitions.push(n.pointer);
    }
  }
  return { reachable, unreachableDefinitions };
}

/** `#/$defs/a%20b` as the pointer suffix `/$defs/a b` (RFC 6901 escapes kept). */
function decodeRef(ref: string): string {
  return ref === '#' ? '' : decodeURIComponent(ref.slice(1));
}
