/**
 * Keys on the command line: `status` and `records` print 16 hex digits, so `show`, `resolve` and
 * `approve` accept any unique prefix of at least 8. An ambiguous prefix is refused, naming the
 * candidates; nothing is ever picked for the operator.
 */
import type { EndpointStore } from '../activities/store/endpoint-store';
import { UsageError } from './usage-error';

export const MIN_KEY_PREFIX = 8;
const KEY_PREFIX = /^[0-9a-f]{8,64}$/;

/** Checks the shape of a KEY argument (a full key or a prefix of ≥ 8 lowercase hex digits). */
export function keyArgument(value: string): string {
  if (!KEY_PREFIX.test(value)) {
    throw new UsageError(
      `KEY argument: must be the 64 lowercase hex digits of a key, or a unique prefix of at least ${MIN_KEY_PREFIX} (got ${JSON.stringify(value)})`,
    );
  }
  return value;
}

/** The one key among `candidates` that starts with `prefix`; refuses none or several. `where` names what was searched. */
export function uniqueKey(prefix: string, candidates: readonly string[], where: string): string {
  const matches = [...new Set(candidates.filter((k) => k.startsWith(prefix)))].sort();
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new UsageError(`KEY argument ${prefix}: must start a key; no ${where} has a key starting with it`);
  throw new UsageError(
    `KEY argument ${prefix}: must start exactly one key; it is ambiguous: ${matches.length} ${where}s match (${matches.join(', ')}); give more digits`,
  );
}

/** The full key for a KEY argument (a key, or a unique prefix of one), from the endpoint records. */
export async function fullKey(store: EndpointStore, keyArg: string): Promise<string> {
  if (keyArg.length === 64) return keyArg;
  // One more than shown, so "ambiguous" never hides that there are more.
  return uniqueKey(keyArg, await store.keysStartingWith(keyArg, 11), 'endpoint record');
}
