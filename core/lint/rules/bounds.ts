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
      typeof s.maxLength === 'number' || typeof s.pattern === 'string' || (typeof s.format === 'string' && BOUNDED_FORMATS.has(s.format));
    if (!bounded) {
      out.push(
        finding(
          ctx,
          'error',
          'bounded-types',
          n.pointer,
          'string has no upper bound (no maxLength, pattern, enum or const)',
          'add "maxLength" sized to what the tool can take (e.g. 1024 for a path, 65536 for a text block)',
        ),
      );
    }
  }
  if (types.includes('number') || types.includes('integer')) {
    const missing = [
      typeof s.minimum !== 'number' && typeof s.exclusiveMinimum !== 'number' ? 'minimum' : null,
      typeof s.maximum !== 'number' && typeof s.exclusiveMaximum !== 'number' ? 'maximum' : null,
    ].filter((m): m is string => m !== null);
    if (missing.length > 0) {
      const type = types.includes('integer') ? 'integer' : 'number';
      out.push(
        finding(
          ctx,
          'error',
          'bounded-types',
          n.pointer,
          `${type} has no ${missing.join(' and no ')}`,
          `add ${missing.map((m) => `"${m}"`).join(' and ')} for the range the tool accepts`,
        ),
      );
    }
  }
  if (types.includes('array')) {
    const fixedTuple = Array.isArray(s.prefixItems) && s.items === false;
    if (typeof s.maxItems !== 'number' && !fixedTuple) {
      out.push(finding(ctx, 'error', 'bounded-types', n.pointer, 'array has no maxItems', 'add "maxItems" (and bound its items)'));
    }
  }
  return out;
};
