/**
 * Tokens already verified by this worker, so the check at every access does not redo the schema
 * validation, JCS and HMAC for the same token on every call of a trajectory.
 *
 * The cache key is the exact JSON text of the whole token as received: a token that differs in
 * any byte — the body, the signature, or a member beside them — misses and is verified in full,
 * so the cache never changes what verifies (a member the schema refuses is refused every time). Entries belong to one key ring (a rotated
 * ring starts empty), and expiry, audience, rights, objects, cost and budget are still checked on
 * every access — only "is this body signed by a key we hold" is remembered.
 */
import type { CapabilityToken } from '../../core/capability/token';
import type { KeyRing } from './keyring';

const MAX_ENTRIES = 10_000;
const caches = new WeakMap<KeyRing, Map<string, CapabilityToken>>();

function cacheFor(ring: KeyRing): Map<string, CapabilityToken> {
  let cache = caches.get(ring);
  if (!cache) caches.set(ring, (cache = new Map<string, CapabilityToken>()));
  return cache;
}

/** The cache key of a raw token, or null when it does not even look like one. */
export function verifiedKey(raw: unknown): string | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const { body, sig } = raw as { body?: unknown; sig?: unknown };
  if (typeof sig !== 'string' || !body || typeof body !== 'object') return null;
  return JSON.stringify(raw);
}

export function lookupVerified(ring: KeyRing, key: string | null): CapabilityToken | undefined {
  return key === null ? undefined : cacheFor(ring).get(key);
}

export function rememberVerified(ring: KeyRing, key: string | null, token: CapabilityToken): void {
  if (key === null) return;
  const cache = cacheFor(ring);
  if (cache.size >= MAX_ENTRIES) cache.clear(); // simple bound; a miss only costs a full verification
  cache.set(key, token);
}
