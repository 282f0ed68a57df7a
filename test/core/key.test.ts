/** Key derivation (docs/design.md#key-derivation): canonical, unambiguous, validated. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256 } from '@noble/hashes/sha2.js';
import { hmac } from '@noble/hashes/hmac.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { deriveKey, keyMaterial, type CallIdentity } from '../../core/key';
import { canonicalJson } from '../../core/jcs';

const base: CallIdentity = { trajectoryId: 'traj-1', turn: 3, callId: 'call_1', tool: 'file_edit', args: { path: '/a', force: true } };

/** Rebuilds an object with its members in another order, recursively. */
function reorder(value: unknown, flip: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => reorder(v, flip));
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => [k, reorder(v, flip)] as const);
    if (flip) entries.reverse();
    return Object.fromEntries(entries);
  }
  return value;
}

const jsonArgs = fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 });
const id = fc.string({ minLength: 1, maxLength: 40 });

describe('deriveKey', () => {
  it('is the SHA-256 of the JCS array, as hex', () => {
    const material = '["settle.key.v1","traj-1",3,"call_1","file_edit",{"force":true,"path":"/a"}]';
    expect(new TextDecoder().decode(keyMaterial(base))).toBe(material);
    expect(deriveKey(base)).toBe(bytesToHex(sha256(new TextEncoder().encode(material))));
  });

  it('keyed mode is HMAC-SHA-256 over the same material and differs from the default', () => {
    const secret = new TextEncoder().encode('runtime-secret');
    expect(deriveKey(base, secret)).toBe(bytesToHex(hmac(sha256, secret, keyMaterial(base))));
    expect(deriveKey(base, secret)).not.toBe(deriveKey(base));
    expect(deriveKey(base, new TextEncoder().encode('other'))).not.toBe(deriveKey(base, secret));
  });

  it('is stable under member reordering and JSON whitespace (property)', () => {
    fc.assert(
      fc.property(jsonArgs, fc.integer({ min: 0, max: 8 }), (args, indent) => {
        // Round-trip through JSON text with other whitespace and another member order.
        const reparsed = JSON.parse(JSON.stringify(reorder(args, true), null, indent)) as Record<string, unknown>;
        expect(deriveKey({ ...base, args: reparsed })).toBe(deriveKey({ ...base, args }));
      }),
    );
  });

  it('differs when any component differs (property)', () => {
    fc.assert(
      fc.property(id, id, fc.nat(1000), fc.nat(1000), jsonArgs, jsonArgs, (a, b, t1, t2, args1, args2) => {
        const k = (c: Partial<CallIdentity>) => deriveKey({ ...base, ...c });
        if (a !== b) {
          expect(k({ trajectoryId: a })).not.toBe(k({ trajectoryId: b }));
          expect(k({ callId: a })).not.toBe(k({ callId: b }));
        }
        if (t1 !== t2) expect(k({ turn: t1 })).not.toBe(k({ turn: t2 }));
        if (canonicalJson(args1) !== canonicalJson(args2)) expect(k({ args: args1 })).not.toBe(k({ args: args2 }));
      }),
    );
  });

  it('has no separator injection: ("x|y","z") and ("x","y|z") differ, for any split (property)', () => {
    expect(deriveKey({ ...base, trajectoryId: 'x|y', callId: 'z' })).not.toBe(deriveKey({ ...base, trajectoryId: 'x', callId: 'y|z' }));
    fc.assert(
      fc.property(fc.string({ minLength: 2, maxLength: 30 }), fc.string({ maxLength: 5 }), fc.nat(), (s, sep, cut) => {
        const i = 1 + (cut % (s.length - 1));
        const left = s.slice(0, i) + sep;
        const right = s.slice(i);
        const other = { trajectoryId: s.slice(0, i), callId: sep + right };
        fc.pre(left !== other.trajectoryId);
        expect(deriveKey({ ...base, trajectoryId: left, callId: right })).not.toBe(deriveKey({ ...base, ...other }));
      }),
    );
  });

  it('tool and args cannot trade places either', () => {
    expect(deriveKey({ ...base, tool: 'a', args: { b: 1 } })).not.toBe(deriveKey({ ...base, tool: 'ab', args: { '': 1 } }));
  });

  it.each([
    [{ turn: -1 }, /turn must be an integer ≥ 0/],
    [{ turn: 1.5 }, /turn must be an integer ≥ 0/],
    [{ trajectoryId: '' }, /trajectory_id must be non-empty/],
    [{ callId: 'x'.repeat(256) }, /call_id must be at most 255 characters/],
    [{ tool: 'File-Edit' }, /tool must match/],
    [{ tool: 'a'.repeat(65) }, /tool must match/],
    [{ args: [] as unknown as Record<string, unknown> }, /args must be a JSON object \(got array\)/],
    [{ args: null as unknown as Record<string, unknown> }, /args must be a JSON object/],
    [{ args: { n: Number.NaN } }, /args\.n must be a finite number \(got NaN\)/],
    [{ args: { n: [1, Number.POSITIVE_INFINITY] } }, /args\.n\[1\] must be a finite number/],
    [{ args: { s: 'ok\ud800' } }, /args\.s must contain no lone surrogate/],
    [{ args: { ['\udc00']: 1 } }, /member name .* must contain no lone surrogate/],
    [{ callId: 'a\udfff' }, /call_id must contain no lone surrogate/],
    [{ args: { d: new Date(0) } as unknown as Record<string, unknown> }, /args\.d must be a plain JSON object \(got Date\)/],
    [{ args: { u: undefined } }, /args\.u must be a JSON value \(got undefined\)/],
  ])('rejects %j with a clear error', (override, message) => {
    expect(() => deriveKey({ ...base, ...override })).toThrow(message);
  });

  it('accepts well-formed astral characters (surrogate pairs)', () => {
    expect(deriveKey({ ...base, args: { s: '😀' } })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('canonicalJson (RFC 8785)', () => {
  it('sorts members by UTF-16 code units and serializes numbers the ECMAScript way', () => {
    // Test vectors in the spirit of RFC 8785 §3.2.3 (ordering) and Appendix B (numbers).
    expect(canonicalJson({ '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3, '1': 4, '\u00f6': 5 })).toBe('{"\\r":2,"1":4,"ö":5,"€":1,"😀":3}');
    // eslint-disable-next-line no-loss-of-precision -- the literal shows what ECMAScript numbers make of it
    expect(canonicalJson([1e21, 1e-7, 0.000001, -0, 333333333.3333333, 9007199254740993])).toBe(
      '[1e+21,1e-7,0.000001,0,333333333.3333333,9007199254740992]',
    );
    expect(canonicalJson({ a: '\u2028\u0007"\\/' })).toBe('{"a":"\u2028\\u0007\\"\\\\/"}');
  });
});
