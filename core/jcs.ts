/**
 * RFC 8785 JSON Canonicalization Scheme (JCS).
 *
 * Serialization itself is delegated to the maintained `canonicalize` package. Before handing a
 * value over we walk it once and refuse what JCS cannot represent faithfully — non-finite
 * numbers, lone UTF-16 surrogates, non-JSON values (undefined, functions, bigint, symbols,
 * class instances) and nesting deeper than MAX_JSON_DEPTH (`canonicalize` recurses) — because
 * silently dropping or rewriting them would make two different calls share a key. JSON *text*
 * enters through core/json-text.ts, which also refuses what a parsed value can no longer show
 * (repeated member names, numbers a double rounds). Pure: safe inside Temporal's workflow sandbox.
 */
import canonicalize from 'canonicalize';
import { InputError } from './errors';
import { assertJsonValue, MAX_JSON_DEPTH, type JsonValue } from './json-text';

export { assertJsonValue, MAX_JSON_DEPTH, type JsonValue };

/** Returns the RFC 8785 text of `value`, or throws InputError naming the offending location. */
export function canonicalJson(value: unknown, field = '$'): string {
  assertJsonValue(value, field);
  const text = canonicalize(value);
  if (text === undefined) throw new InputError(field, 'be a JSON value');
  return text;
}

/**
 * Serializes a value that assertJsonValue has already accepted (callers that validate field by
 * field use this to avoid walking the value twice).
 */
export function canonicalJsonOfValidated(value: JsonValue): string {
  return canonicalize(value)!;
}
