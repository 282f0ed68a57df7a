/**
 * The strict JSON-text entry point (core/json-text.ts): RFC 8259 grammar exactly as JSON.parse
 * reads it, plus the I-JSON rules that keep two different calls from sharing a key.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../core/errors';
import { canonicalJson } from '../../core/jcs';
import { MAX_JSON_DEPTH, parseIJson, parseToolArguments, type JsonValue } from '../../core/json-text';
import { deriveKey } from '../../core/key';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const keyOf = (args: JsonValue) =>
  deriveKey({ trajectoryId: 'traj', turn: 0, callId: 'c', tool: 't', args: args as Record<string, unknown> });
const keyOfText = (text: string) => keyOf(parseIJson(text, { field: 'args' }));

// ---------------------------------------------------------------------------------------------
// I-JSON values and the many texts that denote each of them.

/** Any finite double: its shortest form is a JSON text that denotes it exactly, in every notation. */
const ijsonNumber = fc.oneof(
  fc.integer({ min: -MAX_SAFE, max: MAX_SAFE }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const ijsonString = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.constantFrom('a', 'b', 'A', ''),
);
const ijsonValue: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    ijsonNumber,
    ijsonString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(ijsonString, tie('value'), { maxKeys: 4 }),
  ),
})).value;
const ijsonArgs = fc.dictionary(ijsonString, ijsonValue, { maxKeys: 5 });

/** Equality of I-JSON values: members unordered, numbers as doubles (so -0 equals 0, as RFC 8785 prints both as 0). */
function sameValue(a: JsonValue, b: JsonValue): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]!));
  }
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && sameValue(a[k]!, b[k]!));
}

/** Random choices for rendering one value as text (seeded by fast-check, so failures replay). */
class Style {
  constructor(private state: number) {}
  /** mulberry32 */
  private next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  nextInt(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  nextBoolean(): boolean {
    return this.next() < 0.5;
  }
}
const seed = fc.integer().map((n) => new Style(n));

const WHITESPACE = [' ', '\t', '\n', '\r', '  ', ''];

function ws(r: Style): string {
  return r.nextInt(0, 2) === 0 ? WHITESPACE[r.nextInt(0, WHITESPACE.length - 1)]! : '';
}

/** Another text of the same decimal value: trailing zeros, exponent forms, upper-case E. */
function numberText(d: number, r: Style): string {
  const shortest = Object.is(d, -0) ? (r.nextBoolean() ? '-0' : '0') : JSON.stringify(d);
  const m = /^(-)?(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(shortest)!;
  const sign = m[1] ?? '';
  const digits = (m[2]! + (m[3] ?? '')).replace(/^0+(?=\d)/, '');
  const exponent = Number(m[4] ?? 0) - (m[3] ?? '').length;
  switch (r.nextInt(0, 3)) {
    case 0:
      return shortest;
    case 1: {
      // d.ddd × 10^x with extra trailing zeros and a random exponent marker.
      const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : `${digits}.0`;
      const zeros = '0'.repeat(r.nextInt(0, 3));
      const e = exponent + digits.length - 1;
      return `${sign}${mantissa}${zeros}${r.nextBoolean() ? 'e' : 'E'}${e >= 0 && r.nextBoolean() ? '+' : ''}${e}`;
    }
    case 2:
      // All digits, exponent only.
      return `${sign}${digits}e${exponent}`;
    default:
      // A fraction with trailing zeros, when the number has one.
      return m[3] !== undefined && m[4] === undefined ? `${shortest}${'0'.repeat(r.nextInt(1, 3))}` : shortest;
  }
}

function stringText(s: string, r: Style): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    const forced = ch === '"' || ch === '\\' || code < 0x20;
    if (!forced && r.nextInt(0, 3) !== 0) {
      out += ch;
      continue;
    }
    const short: Record<string, string> = {
      '"': '\\"',
      '\\': '\\\\',
      '\n': '\\n',
      '\t': '\\t',
      '\r': '\\r',
      '\b': '\\b',
      '\f': '\\f',
      '/': '\\/',
    };
    if (short[ch] !== undefined && r.nextBoolean()) {
      out += short[ch];
      continue;
    }
    // \uXXXX for each UTF-16 code unit (astral characters become an escaped surrogate pair).
    for (let i = 0; i < ch.length; i++) {
      const hex = ch.charCodeAt(i).toString(16).padStart(4, '0');
      out += `\\u${r.nextBoolean() ? hex : hex.toUpperCase()}`;
    }
  }
  return out + '"';
}

/** One of the many JSON texts that denote `v`: other whitespace, member order, escapes, number forms. */
function render(v: JsonValue, r: Style): string {
  if (v === null || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return numberText(v, r);
  if (typeof v === 'string') return stringText(v, r);
  if (Array.isArray(v)) return `[${ws(r)}${v.map((x) => `${render(x, r)}${ws(r)}`).join(`,${ws(r)}`)}]`;
  const keys = Object.keys(v);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = r.nextInt(0, i);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  return `{${ws(r)}${keys.map((k) => `${stringText(k, r)}${ws(r)}:${ws(r)}${render(v[k]!, r)}${ws(r)}`).join(`,${ws(r)}`)}}`;
}

/** A small change somewhere inside a value (it may happen to produce an equal value). */
function mutate(v: JsonValue, r: Style): JsonValue {
  if (Array.isArray(v)) {
    if (v.length === 0 || r.nextInt(0, 3) === 0) return [...v, 1];
    const i = r.nextInt(0, v.length - 1);
    return v.map((x, j) => (j === i ? mutate(x, r) : x));
  }
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0 || r.nextInt(0, 3) === 0) return { ...v, [`k${r.nextInt(0, 3)}`]: null };
    const k = keys[r.nextInt(0, keys.length - 1)]!;
    return { ...v, [k]: mutate(v[k]!, r) };
  }
  if (typeof v === 'number') {
    return [v + 1, -v, v / 3, v * 1e-10, 0][r.nextInt(0, 4)]!;
  }
  if (typeof v === 'string') return [v + 'x', Array.from(v).slice(1).join(''), v.toUpperCase(), ''][r.nextInt(0, 3)]!;
  return [null, true, false, 0, ''][r.nextInt(0, 4)]!;
}

function refusal(run: () => unknown): InputError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
  throw new Error('expected an InputError, got a value');
}

function nested(depth: number, leaf = '1'): string {
  return '['.repeat(depth) + leaf + ']'.repeat(depth);
}

describe('parseIJson reads JSON exactly as JSON.parse does', () => {
  it('returns what JSON.parse returns for any text of an I-JSON value, however written (property)', () => {
    fc.assert(
      fc.property(ijsonValue, seed, (v, r) => {
        const text = render(v, r);
        expect(parseIJson(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });

  it('refuses every text JSON.parse refuses, with an InputError, and never accepts more (property)', () => {
    // Texts close to JSON: fragments of valid texts with characters dropped, doubled or swapped.
    const near = fc.tuple(
      ijsonValue,
      seed,
      fc.array(fc.tuple(fc.nat(), fc.constantFrom(...'{}[]",:.-+eE0123456789 \\nulltruefalse\u0000'.split(''))), { maxLength: 3 }),
    );
    fc.assert(
      fc.property(near, ([v, r, edits]) => {
        let text = render(v, r);
        for (const [at, ch] of edits) {
          const i = at % (text.length + 1);
          text = r.nextBoolean() ? text.slice(0, i) + ch + text.slice(i) : text.slice(0, i) + text.slice(i + 1);
        }
        let expected: unknown;
        try {
          expected = JSON.parse(text);
        } catch {
          refusal(() => parseIJson(text)); // an InputError, whichever rule it meets first
          return;
        }
        // JSON.parse accepted it: the same value, unless an I-JSON rule refuses it.
        try {
          expect(parseIJson(text)).toEqual(expected);
        } catch (err) {
          expect(err).toBeInstanceOf(InputError);
          expect((err as InputError).rule).toMatch(
            /^(occur only once|be an integer from|round-trip exactly|be representable|be within the range|contain no lone surrogate)/,
          );
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('makes __proto__ an own member, as JSON.parse does', () => {
    const v = parseIJson('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__']);
    expect(canonicalJson(v)).toBe('{"__proto__":{"polluted":true}}');
  });

  it.each([
    ['-0', -0],
    ['4.50', 4.5],
    ['1E30', 1e30],
    ['1e21', 1e21],
    ['2e-3', 0.002],
    ['0.000000000000000000000000001', 1e-27],
    ['9007199254740991', MAX_SAFE],
    ['-9007199254740991', -MAX_SAFE],
    ['9007199254740992', 2 ** 53],
    ['9007199254740992.0', 2 ** 53],
    ['-9007199254740994', -(2 ** 53 + 2)],
    ['100000000000000000000', 1e20],
    ['1e20', 1e20],
    ['1152921504606847000', 2 ** 60], // 2^60 as RFC 8785 prints it
    ['1000000000000000000000', 1e21],
    ['9.007199254740992e15', 2 ** 53],
    ['5e-324', 5e-324],
    ['1.7976931348623157e308', Number.MAX_VALUE],
    ['0e99999', 0],
  ])('accepts the number %s, whose decimal value a double holds exactly as RFC 8785 prints it', (text, value) => {
    expect(parseIJson(text)).toBe(value);
  });

  it('accepts well-formed astral characters, escaped as a surrogate pair or raw', () => {
    expect(parseIJson('"\\ud83d\\ude00😀"')).toBe('😀😀');
  });
});

describe('parseIJson refuses what would let two different calls share a key', () => {
  it.each([
    ['{"a":1,"a":2}', 'args.a', /^occur only once in its object \(member name "a" repeated at offset 7; RFC 8785 §3\.1/],
    ['{"a":1,"a":1}', 'args.a', /^occur only once/],
    ['{"a":1,"\\u0061":2}', 'args.a', /^occur only once/],
    ['{"x":[{"b c":0,"b c":0}]}', 'args.x[0]["b c"]', /^occur only once/],
    ['{"id":9007199254740993}', 'args.id', /^round-trip exactly .*9007199254740993 would be read as 9007199254740992;/],
    ['{"id":-9007199254740993}', 'args.id', /^round-trip exactly/],
    ['{"id":12345678901234567890123}', 'args.id', /^round-trip exactly .* would be read as 1\.2345678901234568e\+22/],
    // The exact value of the double nearest 1e23: RFC 8785 prints that double as 1e+23, so only that decimal value is accepted.
    ['{"id":99999999999999991611392}', 'args.id', /^round-trip exactly .* would be read as 1e\+23/],
    // Likewise 2^60's binary value: accepting it besides 1152921504606847000 would give two numbers one key.
    ['{"id":1152921504606846976}', 'args.id', /^round-trip exactly .* would be read as 1152921504606847000;/],
    ['{"x":9007199254740993.0}', 'args.x', /^round-trip exactly .*9007199254740993\.0 would be read as 9007199254740992/],
    ['{"x":9.007199254740993e15}', 'args.x', /^round-trip exactly/],
    ['{"x":0.10000000000000001}', 'args.x', /^round-trip exactly .* would be read as 0\.1;/],
    ['{"x":333333333.33333329}', 'args.x', /^round-trip exactly/],
    ['{"x":1.0000001e-320}', 'args.x', /^round-trip exactly .* would be read as 1e-320/],
    ['{"x":1e-400}', 'args.x', /^be representable as an IEEE 754 double \(1e-400 underflows to 0\)/],
    ['{"x":-1e-400}', 'args.x', /underflows to 0/],
    ['{"x":1e400}', 'args.x', /^be within the range of an IEEE 754 double \(1e400 overflows\)/],
    ['{"x":[1,-1E+309]}', 'args.x[1]', /overflows/],
    ['{"s":"\\ud800"}', 'args.s', /^contain no lone surrogate \(high surrogate U\+D800 at index 0\)/],
    ['{"s":"ok\\udc00"}', 'args.s', /^contain no lone surrogate \(low surrogate U\+DC00 at index 2\)/],
    ['{"\\udfff":1}', 'args member name', /^contain no lone surrogate/],
    ['{"s":"\ud800"}', 'args.s', /^contain no lone surrogate/],
  ])('%s: %s', (text, field, rule) => {
    const err = refusal(() => parseIJson(text, { field: 'args' }));
    expect(err.field).toBe(field);
    expect(err.rule).toMatch(rule);
  });

  it('names the place of a syntax error by line, column and offset', () => {
    expect(refusal(() => parseIJson('{\n  "path": "/a",\n  offset: 1', { field: 'args' })).message).toBe(
      'args must be valid JSON (expected a member name in double quotes; found "offset: 1" at line 3, column 3 (offset 20))',
    );
    expect(refusal(() => parseIJson('[1,', { field: 'args' })).message).toBe(
      'args must be valid JSON (unexpected end of the text, expected a value; found the end at line 1, column 4 (offset 3))',
    );
    expect(refusal(() => parseIJson('\ufeff{}')).rule).toMatch(/^be valid JSON/); // a BOM in a string is not JSON
  });

  it.each([
    [[0x7b, 0x7d, 0xff], 'invalid byte 0xff at byte offset 2'],
    [[0x22, 0xc0, 0xaf, 0x22], 'invalid byte 0xc0 at byte offset 1'], // overlong "/"
    [[0x22, 0x80, 0x22], 'invalid byte 0x80 at byte offset 1'], // a continuation byte with no lead
    [[0x22, 0xed, 0xa0, 0x80, 0x22], 'invalid sequence 0xed 0xa0 at byte offset 1 (an encoded surrogate)'],
    [[0x22, 0xe0, 0x80, 0x80, 0x22], 'invalid sequence 0xe0 0x80 at byte offset 1 (an overlong encoding)'],
    [[0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], 'invalid sequence 0xf4 0x90 at byte offset 1 (beyond U+10FFFF)'],
    // A character cut short is reported where it starts, not at the byte after it.
    [[0x22, 0x63, 0x61, 0x66, 0xe9, 0x2e, 0x22], 'truncated character at byte offset 4: 0xe9 starts a 3-byte sequence, then 0x2e'],
    [[0x22, 0xf0, 0x9f, 0x98, 0x22], 'truncated character at byte offset 1: 0xf0 0x9f 0x98 starts a 4-byte sequence, then 0x22'],
    [[0x22, 0xe2, 0x82], 'truncated character at byte offset 1: 0xe2 0x82 starts a 3-byte sequence, then the text ends'],
  ])('refuses invalid UTF-8 bytes %j (never U+FFFD)', (bytes, where) => {
    const err = refusal(() => parseIJson(new Uint8Array(bytes), { field: 'stdin' }));
    expect(err.message).toBe(`stdin must be valid UTF-8 (${where})`);
  });

  it('gives Latin-1 bytes no key: caf\\xe9, caf\\xe8 and caf\\ufffd are not one value', () => {
    const latin1 = (byte: number) => new Uint8Array([...Buffer.from('{"path":"caf'), byte, ...Buffer.from('.txt"}')]);
    for (const byte of [0xe9, 0xe8, 0xff, 0xfe])
      expect(refusal(() => parseIJson(latin1(byte), { field: 'args' })).rule).toMatch(/^be valid UTF-8/);
    expect(parseIJson(new TextEncoder().encode('{"path":"caf\ufffd.txt"}'))).toEqual({ path: 'caf\ufffd.txt' });
  });

  it('decodes UTF-8 bytes, dropping a leading byte order mark', () => {
    const utf8 = new TextEncoder().encode('{"é":"€😀"}');
    expect(parseIJson(utf8)).toEqual({ é: '€😀' });
    expect(parseIJson(new Uint8Array([0xef, 0xbb, 0xbf, ...utf8]))).toEqual({ é: '€😀' });
  });
});

describe('depth: a documented limit, no recursion', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}, naming where`, () => {
    expect(canonicalJson(parseIJson(nested(MAX_JSON_DEPTH)))).toBe(nested(MAX_JSON_DEPTH));
    const err = refusal(() => parseIJson(`{"a":${nested(MAX_JSON_DEPTH)}}`, { field: 'args' }));
    expect(err.message).toBe(
      `args.a${'[0]'.repeat(MAX_JSON_DEPTH - 1)} must nest arrays and objects at most ${MAX_JSON_DEPTH} levels deep`,
    );
    expect(refusal(() => parseIJson(nested(3), { maxDepth: 2 })).rule).toBe('nest arrays and objects at most 2 levels deep');
  });

  it('refuses a million levels with the same error, not a stack overflow', () => {
    expect(refusal(() => parseIJson('['.repeat(1_000_000))).rule).toMatch(/^nest arrays and objects at most 64 levels deep/);
    expect(refusal(() => parseIJson('{"a":'.repeat(1_000_000))).rule).toMatch(/^nest arrays and objects at most 64/);
    // With the limit lifted, the parser itself still does not recurse.
    expect(parseIJson(nested(200_000), { maxDepth: Infinity })).toBeInstanceOf(Array);
  });

  it('canonicalJson and deriveKey refuse values deeper than the limit, and cyclic ones, before canonicalize recurses', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = [deep];
    expect(refusal(() => canonicalJson(deep, 'stdin')).rule).toBe(`nest arrays and objects at most ${MAX_JSON_DEPTH} levels deep`);
    expect(refusal(() => keyOf({ a: deep as JsonValue })).field).toBe(`args.a${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(refusal(() => keyOf(cyclic as JsonValue)).rule).toMatch(/^nest arrays and objects at most/);
    // The same limit as text: args of exactly MAX_JSON_DEPTH levels have a key.
    expect(keyOfText(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('keys of argument texts', () => {
  it('differ for any two texts that parse to different I-JSON values, and agree for equal ones (property)', () => {
    fc.assert(
      fc.property(ijsonArgs, seed, fc.boolean(), (a, r, reformatOnly) => {
        const b = reformatOnly ? a : (mutate(a, r) as Record<string, JsonValue>);
        const ka = keyOfText(render(a, r));
        const kb = keyOfText(render(b, r));
        if (sameValue(a, b)) expect(ka).toBe(kb);
        else expect(ka).not.toBe(kb);
      }),
      { numRuns: 1000 },
    );
  });

  it('are the same after re-serialising an accepted text and parsing it again (property)', () => {
    fc.assert(
      fc.property(ijsonArgs, seed, (a, r) => {
        const text = render(a, r);
        const parsed = parseIJson(text, { field: 'args' });
        for (const again of [JSON.stringify(parsed), canonicalJson(parsed), render(parsed, r)]) {
          expect(keyOfText(again)).toBe(keyOf(parsed));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("of the issue's examples differ, or are refused", () => {
    expect(() => keyOfText('{"a":1,"a":2}')).toThrow(/args\.a must occur only once/);
    expect(keyOfText('{"id":9007199254740991}')).not.toBe(keyOfText('{"id":9007199254740990}'));
    expect(() => keyOfText('{"id":9007199254740993}')).toThrow(InputError);
    // One number rule in every notation: the texts of one decimal value share a key; a text a double would round has none.
    const twentyZeros = keyOfText('{"n":100000000000000000000}');
    for (const t of ['1e20', '1E+20', '1.0e20', '100000000000000000000.000', '0.1e21']) expect(keyOfText(`{"n":${t}}`)).toBe(twentyZeros);
    expect(keyOfText('{"n":9007199254740992}')).toBe(keyOfText('{"n":9007199254740992.0}'));
    expect(() => keyOfText('{"n":333333333.33333329}')).toThrow(/round-trip exactly/);
    expect(() => keyOfText('{"x":1e-400}')).toThrow(/underflows to 0/);
  });
});

describe('parseToolArguments (the model adapter)', () => {
  it('refuses what I-JSON refuses', () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ a: 1 });
    expect(() => parseToolArguments('{"a":')).toThrow(/^args must be valid JSON/);
    expect(() => parseToolArguments('{"a":1,"a":2}')).toThrow(/^args\.a must occur only once/);
    expect(() => parseToolArguments(nested(100))).toThrow(/must nest arrays and objects at most 64 levels deep/);
  });

  it('asks before accepting an integer beyond 2^53 − 1, which histories from before refused', () => {
    const asked: string[] = [];
    const large = (answer: boolean) => () => (asked.push(String(answer)), answer);
    expect(parseToolArguments('{"n":100000000000000000000}', large(true))).toEqual({ n: 1e20 });
    expect(() => parseToolArguments('{"n":100000000000000000000}', large(false))).toThrow(
      /^args\.n must be an integer from -9007199254740991 to 9007199254740991/,
    );
    // Not asked where the answer changes nothing: safe integers, other notations, rounded text.
    expect(parseToolArguments('{"n":9007199254740991,"m":1e20,"k":9007199254740992.0}', large(false))).toEqual({
      n: MAX_SAFE,
      m: 1e20,
      k: 2 ** 53,
    });
    expect(() => parseToolArguments('{"n":9007199254740993}', large(true))).toThrow(/round-trip exactly/);
    expect(asked).toEqual(['true', 'false']);
  });
});
