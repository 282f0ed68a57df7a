/** RFC 6901 JSON pointers: how findings say where in a document the problem is. */

export function appendPointer(base: string, ...tokens: (string | number)[]): string {
  return base + tokens.map((t) => '/' + String(t).replaceAll('~', '~0').replaceAll('/', '~1')).join('');
}

/** The value a same-document `$ref` (`#` or `#/a/b`) points at inside `root`, or undefined. */
export function resolveLocalRef(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let current: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const token = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object' || !Object.prototype.hasOwnProperty.call(current, token)) return undefined;
    current = (current as Record<string, unknown>)[token];
  }
  return current;
}
