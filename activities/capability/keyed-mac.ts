/**
 * HMAC-SHA-256 (RFC 2104) with the key's pads prepared once per key, for the capability check's
 * cold path (every first access with a token signs its body again to compare).
 *
 *   HMAC(K, m) = H((K0 ⊕ opad) ‖ H((K0 ⊕ ipad) ‖ m))      K0 = K, or H(K) when longer than a block
 *
 * `createHmac` sets up a keyed context on every call, which costs as much as hashing the body;
 * here the two padded key blocks are written once into per-key buffers and each MAC is two
 * one-shot `crypto.hash` calls over them (about half of `createHmac`'s time). The buffers are
 * reused across calls (all synchronous, so no two calls share them at once).
 * test/capability/keyed-mac.test.ts holds the result equal to `createHmac` for arbitrary keys
 * and texts.
 */
import crypto from 'node:crypto';

const BLOCK = 64;
const DIGEST = 32;
/** Bodies whose UTF-8 may be longer than this go through createHmac (no scratch buffer grows without bound). */
const MAX_SCRATCH_TEXT_BYTES = 8192;

class KeyedMac {
  /** (K0 ⊕ ipad) followed by room for the message. */
  private readonly inner = Buffer.alloc(BLOCK + MAX_SCRATCH_TEXT_BYTES);
  /** (K0 ⊕ opad) followed by the inner digest. */
  private readonly outer = Buffer.alloc(BLOCK + DIGEST);

  constructor(private readonly key: Buffer) {
    const k0 = Buffer.alloc(BLOCK);
    (key.length > BLOCK ? crypto.createHash('sha256').update(key).digest() : key).copy(k0);
    for (let i = 0; i < BLOCK; i++) {
      this.inner[i] = k0[i]! ^ 0x36;
      this.outer[i] = k0[i]! ^ 0x5c;
    }
  }

  /** base64url of HMAC-SHA-256(key, UTF-8 of text). */
  base64url(text: string): string {
    // A UTF-16 code unit is at most 3 bytes of UTF-8.
    if (text.length * 3 > MAX_SCRATCH_TEXT_BYTES) return crypto.createHmac('sha256', this.key).update(text, 'utf8').digest('base64url');
    const n = this.inner.write(text, BLOCK, 'utf8');
    // binary (latin1): the digest's bytes one per character, so writing it back copies them unchanged
    // (no Buffer allocated per call).
    const innerDigest = crypto.hash('sha256', this.inner.subarray(0, BLOCK + n), 'binary');
    this.outer.write(innerDigest, BLOCK, 'binary');
    return crypto.hash('sha256', this.outer, 'base64url');
  }
}

const prepared = new WeakMap<Buffer, KeyedMac>();

/** base64url HMAC-SHA-256 of `text` (as UTF-8) under `key`; the key's pads are prepared on first use. */
export function hmacBase64url(key: Buffer, text: string): string {
  let mac = prepared.get(key);
  // Key ring buffers are never changed in place; the copy keeps pads and fallback on one key if one were.
  if (!mac) prepared.set(key, (mac = new KeyedMac(Buffer.from(key))));
  return mac.base64url(text);
}

/**
 * Equality of two strings in time that depends only on their lengths (for MACs in base64url,
 * whose length is public: 43 characters).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
