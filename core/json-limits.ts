/**
 * Size and depth limits for JSON values that enter workflow history (arguments, inputs).
 * Everything here is iterative: a hostile value nested 100,000 deep must produce an error that
 * names the rule, never a stack overflow inside a workflow task (which would fail it forever).
 */

/** Deepest nesting of objects/arrays accepted anywhere JSON enters settle (arguments, specs). */
export const MAX_JSON_DEPTH = 64;

/**
 * The nesting depth of `value` (a scalar is 0, `{}` is 1), or `limit + 1` as soon as it is
 * known to exceed `limit` — so the walk costs at most the value's size, never a deep recursion.
 */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let deepest = 0;
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    const here = depth + 1;
    if (here > limit) return limit + 1;
    if (here > deepest) deepest = here;
    const children = Array.isArray(node) ? node : Object.values(node as Record<string, unknown>);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push({ node: child, depth: here });
  }
  return deepest;
}

/**
 * Characters of `value`'s JSON text (as JSON.stringify writes it), or Infinity when it is too
 * deep to serialise safely. Call after a depth check for an exact figure.
 */
export function jsonLength(value: unknown): number {
  if (jsonDepth(value) > MAX_JSON_DEPTH) return Infinity;
  return JSON.stringify(value)?.length ?? 0;
}
