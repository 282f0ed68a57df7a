/**
 * Rule 3: a bound on every type. An unbounded input lets one call carry more than the tool, or
 * the context that records the call, can hold. Strings need maxLength, pattern, enum/const or a
 * format whose syntax has a fixed maximum length; numbers a minimum and a maximum; arrays
 * maxItems. A property without any type accepts every JSON value and is reported too.
 */
import { declaredTypes, isEnumerated } from '../walk';
import { finding, type NodeRule } from './context';

// Formats whose every valid value is short. Not date-time/time (RFC 3339 allows any number of
// fraction digits), not email/uri/hostname (validators check the shape, not the length).
const BOUNDED_FORMATS = new Set(['date', 'uuid', 'ipv4', 'ipv6']);

/**
 * Bounds that are a number type's own limits, written by generators rather than chosen for the
 * tool: int32/uint32 maxima, the largest exact double integer, and anything beyond it.
 */
const TYPE_LIMITS = new Set([2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, -(2 ** 31), -(2 ** 31 - 1)]);
const TYPE_LIMIT_TEXT = 'is the largest value of a number type: it bounds nothing';

function typeLimit(v: unknown): boolean {
  return typeof v === 'number' && (TYPE_LIMITS.has(v) || Math.abs(v) >= Number.MAX_SAFE_INTEGER);
}

/** A bound the tool chose: a finite number that is not a type's limit. */
function realBound(v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v) && !typeLimit(v);
}

const COMPOSED = ['$ref', '$dynamicRef', 'anyOf', 'oneOf', 'allOf', 'not', 'if', 'properties', 'items', 'prefixItems'];

export const checkBounds: NodeRule = (n, ctx) => {
  const valuePosition = n.role === 'property' || n.role === 'value';
  if (typeof n.node === 'boolean') {
    return n.node && valuePosition && !/\/(additionalProperties|unevaluatedProperties)$/.test(n.pointer)
      ? [finding(ctx, 'error', 'bounded-types', n.pointer, 'schema is `true`: any JSON value passes', 'give it a type and a bound')]
      : [];
  }
  const s = n.node;
  if (isEnumerated(s)) return [];
  const types = declaredTypes(s);
  if (types.length === 0) {
    // additionalProperties schemas are reported as bags by the objects rule.
    if (!valuePosition || /\/(additionalProperties|unevaluatedProperties)$/.test(n.pointer) || COMPOSED.some((k) => k in s)) return [];
    return [
      finding(
        ctx,
        'error',
        'bounded-types',
        n.pointer,
        'declares no type: any JSON value passes',
        'give it a "type" and a bound (e.g. "type": "string", "maxLength": 1024)',
      ),
    ];
  }
  const out = [];
  if (types.includes('string')) {
    const bounded =
      realBound(s.maxLength) || typeof s.pattern === 'string' || (typeof s.format === 'string' && BOUNDED_FORMATS.has(s.format));
    if (!bounded) {
      out.push(
        finding(
          ctx,
          'error',
          'bounded-types',
          n.pointer,
          typeLimit(s.maxLength)
            ? `string's maxLength ${String(s.maxLength)} ${TYPE_LIMIT_TEXT}`
            : 'string has no upper bound (no maxLength, pattern, enum or const)',
          'add "maxLength" sized to what the tool can take (e.g. 1024 for a path, 65536 for a text block)',
        ),
      );
    }
  }
  if (types.includes('number') || types.includes('integer')) {
    const type = types.includes('integer') ? 'integer' : 'number';
    const problems: string[] = [];
    const missing: string[] = [];
    for (const [side, keys] of [
      ['minimum', ['minimum', 'exclusiveMinimum']],
      ['maximum', ['maximum', 'exclusiveMaximum']],
    ] as const) {
      const given = keys.map((k) => s[k]).filter((v): v is number => typeof v === 'number');
      if (given.some(realBound)) continue;
      missing.push(side);
      problems.push(given.length === 0 ? `has no ${side}` : `'s ${side} ${String(given[0])} ${TYPE_LIMIT_TEXT}`);
    }
    if (problems.length > 0) {
      const message = problems.every((p) => p.startsWith('has no'))
        ? `${type} has no ${missing.join(' and no ')}`
        : `${type}${problems.map((p, i) => (i === 0 ? (p.startsWith("'s") ? p : ` ${p}`) : `, and ${p.startsWith("'s") ? `its${p.slice(2)}` : p}`)).join('')}`;
      out.push(
        finding(
          ctx,
          'error',
          'bounded-types',
          n.pointer,
          message,
          `add ${missing.map((m) => `"${m}"`).join(' and ')} for the range the tool accepts`,
        ),
      );
    }
  }
  if (types.includes('array')) {
    const fixedTuple = Array.isArray(s.prefixItems) && s.items === false;
    if (!realBound(s.maxItems) && !fixedTuple) {
      const message = typeLimit(s.maxItems) ? `array's maxItems ${String(s.maxItems)} ${TYPE_LIMIT_TEXT}` : 'array has no maxItems';
      out.push(finding(ctx, 'error', 'bounded-types', n.pointer, message, 'add "maxItems" (and bound its items)'));
    }
  }
  return out;
};
