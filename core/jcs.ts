/**
 * RFC 8785 JSON Canonicalization Scheme (JCS).
 *
 * Serialization itself is delegated to the maintained `canonicalize` package. Before handing a
 * value over we walk it once and refuse what JCS cannot represent faithfully — non-finite
 * numbers, lone UTF-16 surrogates, and non-JSON values (undefined, functions, bigint, symbols,
 * class instances) — because silently dropping or rewriting them would make two different
 * calls share a key. Pure: safe inside Temporal's workflow sandbox.
 */
import canonicalize from 'canonicalize';
import { InputError } from './errors';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Returns the RFC 8785 text of `value`, or throws InputError naming the offending location. */
export function canonicalJson(value: unknown, field = '$'): string {
  assertJsonValue(value, field);
  const text = canonicalize(value);
  if (text === undefined) throw new InputError(field, 'be a JSON value');
  return text;
}

/** Throws InputError unless `value` is plain JSON that JCS can encode without loss. */
export function assertJsonValue(value: unknown, field = '$'): asserts value is JsonValue {
  switch (typeof value) {
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new InputError(field, `be a finite number (got ${String(value)})`);
      return;
    case 'string':
      assertWellFormed(value, field);
      return;
    case 'object': {
      if (value === null) return;
      if (Array.isArray(value)) {
        value.forEach((item, i) => assertJsonValue(item, `${field}[${i}]`));
        return;
      }
      const proto = Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null;
      if (proto !== Object.prototype && proto !== null) {
        throw new InputError(field, `be a plain JSON object (got ${proto?.constructor?.name ?? 'object'})`);
      }
      for (const [k, v] of Object.entries(value)) {
        assertWellFormed(k, `${field} member name ${JSON.stringify(k)}`);
        assertJsonValue(v, `${field}.${k}`);
      }
      return;
    }
    default:
      throw new InputError(field, `be a JSON value (got ${typeof value})`);
  }
}

/**
 * Serializes a value that assertJsonValue has already accepted (callers that validate field by
 * field use this to avoid walking the value twice).
 */
export function canonicalJsonOfValidated(value: JsonValue): string {
  return canonicalize(value)!;
}

/** A lone surrogate has no UTF-8 encoding; JCS requires well-formed Unicode. */
function assertWellFormed(s: string, field: string): void {
  if (s.isWellFormed()) return; // fast path (native); the loop below only locates the problem
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      throw new InputError(field, `contain no lone surrogate (high surrogate U+${c.toString(16).toUpperCase()} at index ${i})`);
    }
    if (c >= 0xdc00 && c <= 0xdfff) {
      throw new InputError(field, `contain no lone surrogate (low surrogate U+${c.toString(16).toUpperCase()} at index ${i})`);
    }
  }
}
