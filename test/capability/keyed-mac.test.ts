/**
 * The capability check's HMAC with prepared key pads (activities/capability/keyed-mac.ts) against
 * node's createHmac: the same MAC for any key (shorter than, equal to and longer than a block)
 * and any text (non-ASCII, lone surrogates, longer than the scratch buffer), call after call.
 */
import crypto from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { constantTimeEqual, hmacBase64url } from '../../activities/capability/keyed-mac';

const reference = (key: Buffer, text: string) => crypto.createHmac('sha256', key).update(text, 'utf8').digest('base64url');

describe('keyed HMAC-SHA-256', () => {
  it('equals createHmac for any key and text (property)', () => {
    const keys = fc.uint8Array({ minLength: 1, maxLength: 200 }).map((b) => Buffer.from(b));
    const texts = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: 'binary', minLength: 2700, maxLength: 3000 }), // past the scratch buffer: createHmac
      fc.constantFrom('', '\ud800', 'é'.repeat(4096), 'a'.repeat(8192)),
    );
    fc.assert(
      fc.property(keys, fc.array(texts, { minLength: 1, maxLength: 4 }), (key, ts) => {
        // Several texts under one key: the reused buffers must not carry one MAC into the next.
        for (const t of ts) expect(hmacBase64url(key, t)).toBe(reference(key, t));
      }),
      { numRuns: 500 },
    );
  });

  it('keeps keys apart, and a key that is 64 bytes or longer (hashed first, as RFC 2104 says)', () => {
    const k1 = crypto.randomBytes(32);
    const k2 = crypto.randomBytes(32);
    const long = crypto.randomBytes(100);
    const block = crypto.randomBytes(64);
    for (const k of [k1, k2, long, block, k1]) expect(hmacBase64url(k, 'body')).toBe(reference(k, 'body'));
    expect(hmacBase64url(k1, 'body')).not.toBe(hmacBase64url(k2, 'body'));
  });

  it('compares strings of equal length by every character', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('xbc', 'abc')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
  });
});
