/**
 * The capability token's fast paths against their references (activities/capability/token-format.ts,
 * core/capability/token.ts): the compiled format check accepts exactly what the zod schema
 * accepts, and the fixed-shape signing text is byte-equal to generic RFC 8785.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkTokenFormat } from '../../activities/capability/token-format';
import { CapabilityToken, genericSigningText, signingText, type CapabilityBody } from '../../core/capability/token';

const validBody: CapabilityBody = {
  v: 1,
  kid: 'k1',
  aud: 'traj-1',
  rights: ['read', 'write'],
  objects: ['path:/srv/ws', 'host:example.com'],
  pred: { max_cost: 10, budget: 1000 },
  exp: 1_900_000_000_000,
  parent: null,
  depth: 0,
};
const validToken = { body: validBody, sig: 'A'.repeat(43) };

/** Strings that stress length counting and patterns: astral characters, lone surrogates, line breaks. */
const tricky = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.constantFrom(
    '',
    'k',
    'path:',
    'path:/a',
    'path:\n',
    'host:x\u2028',
    'path:😀',
    '😀'.repeat(128),
    '😀'.repeat(256),
    'a'.repeat(255),
    'a'.repeat(256),
  ),
  fc.constantFrom(
    '😀'.repeat(32),
    '😀'.repeat(33),
    'k'.repeat(64) + '😀',
    '\ud800'.repeat(256),
    'path:/' + '😀'.repeat(1094),
    'A'.repeat(42) + '😀',
  ),
  fc.constantFrom('\ud800', 'x\udc00', 'repo:o/n', 'path:/' + 'é'.repeat(1094)),
);
const anyValue = fc.oneof(
  tricky,
  fc.integer(),
  fc.constantFrom(0, -1, 1, 1.5, 2 ** 53, 8.64e15, 8.64e15 + 2, 1e12, 1e12 + 1, null, true, [], {}),
  fc.array(tricky, { maxLength: 5 }),
  fc.array(fc.constantFrom('read', 'write', 'exec', 'connect', 'admin'), { maxLength: 6 }),
);
const bodyKeys = Object.keys(validBody);

/** One mutation of the valid token: a member replaced, removed or added, in the body, pred or the token. */
const mutatedToken = fc
  .record({
    where: fc.constantFrom('body', 'pred', 'token'),
    how: fc.constantFrom('set', 'delete', 'add'),
    key: fc.constantFrom(...bodyKeys, 'max_cost', 'budget', 'sig', 'extra'),
    value: anyValue,
  })
  .map(({ where, how, key, value }) => {
    const token = structuredClone(validToken) as Record<string, any>;
    const target = where === 'token' ? token : where === 'body' ? token.body : token.body.pred;
    if (how === 'delete') delete target[key];
    else target[how === 'add' ? `${key}_` : key] = value;
    return token;
  });

/** A string member of the body (or one object) set to a tricky string: where length counting and patterns differ. */
const trickyString = fc.record({ key: fc.constantFrom('kid', 'aud', 'parent', 'objects', 'sig'), value: tricky }).map(({ key, value }) => {
  const token = structuredClone(validToken) as Record<string, any>;
  if (key === 'sig') token.sig = value;
  else if (key === 'objects') token.body.objects = ['path:/srv/ws', value];
  else token.body[key] = value;
  return token;
});

describe('capability token format check', () => {
  it('accepts a valid token and returns it unchanged', () => {
    const result = checkTokenFormat(validToken);
    expect(result).toEqual({ ok: true, token: validToken });
  });

  it('names the field and the rule of a bad token, as zod does', () => {
    const result = checkTokenFormat({ ...validToken, body: { ...validBody, exp: -1 } });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.field).toBe('body.exp');
      expect(result.message).toMatch(/>=\s*0/);
    }
  });

  it('accepts exactly the tokens the zod schema accepts (property, mutated tokens)', () => {
    let accepted = 0;
    fc.assert(
      fc.property(mutatedToken, (token) => {
        const zodSays = CapabilityToken().safeParse(token).success;
        const fast = checkTokenFormat(token);
        if (fast.ok) accepted++;
        // A disagreement would surface as ok:false with the "passed one … failed the other" message.
        expect(fast.ok).toBe(zodSays);
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(trickyString, (token) => {
        const fast = checkTokenFormat(token);
        if (fast.ok) accepted++;
        expect(fast.ok).toBe(CapabilityToken().safeParse(token).success);
      }),
      { numRuns: 3000 },
    );
    // The generator reaches both sides of the boundary, so agreement was tested where it matters.
    expect(accepted).toBeGreaterThan(0);
  });
});

describe('capability signing text', () => {
  // Any code points, and printable ASCII with the characters around the no-escape fast path's
  // edges (quote, backslash, DEL, controls) mixed in.
  const edgy = fc.constantFrom('"', '\\', '\x7f', '\x1f', '\x20', '!', '#', '[', ']', '~', '\u2028', '\ud800', '😀', 'é');
  const text = (maxLength: number) =>
    fc.oneof(
      fc.string({ unit: 'binary', minLength: 1, maxLength }),
      fc.string({ minLength: 1, maxLength }),
      fc.string({ unit: fc.oneof(fc.string({ minLength: 1, maxLength: 1 }), edgy), minLength: 1, maxLength }),
    );
  const body = fc.record({
    v: fc.constant(1 as const),
    kid: fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/),
    aud: text(255),
    rights: fc.uniqueArray(fc.constantFrom('read' as const, 'write' as const, 'exec' as const, 'connect' as const), {
      minLength: 1,
      maxLength: 4,
    }),
    objects: fc.array(
      fc.tuple(fc.constantFrom('path:', 'host:', 'repo:'), text(40)).map(([p, s]) => p + s),
      { minLength: 1, maxLength: 5 },
    ),
    pred: fc.record({ max_cost: fc.integer({ min: 0, max: 1_000_000_000 }), budget: fc.integer({ min: 0, max: 1_000_000_000_000 }) }),
    exp: fc.integer({ min: 0, max: 8.64e15 }),
    parent: fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: null }),
    depth: fc.integer({ min: 0, max: 16 }),
  });

  it('is byte-equal to generic RFC 8785 for any valid body (property)', () => {
    fc.assert(
      fc.property(body, (b) => {
        expect(signingText(b)).toBe(genericSigningText(b));
      }),
      { numRuns: 2000 },
    );
  });

  it('covers every member the schema allows (a new member must be added to signingText)', () => {
    const text = signingText(validBody);
    expect(Object.keys(JSON.parse(text) as object).sort()).toEqual(Object.keys(CapabilityToken().shape.body.shape).sort());
  });
});
