/**
 * The one strict way JSON text enters settle: I-JSON (RFC 7493), which RFC 8785 §3.1 requires
 * of anything it canonicalizes. Keys are derived from parsed values, so whatever `JSON.parse`
 * would silently merge or round would let two different calls share a key. Refused here, each
 * with an InputError naming the member path and the rule:
 *
 * - a member name that occurs twice in one object (`{"a":1,"a":2}` is not `{"a":2}`);
 * - a number whose decimal value is not the one RFC 8785 prints for the double it parses to:
 *   overflow (`1e400`), underflow (`1e-400` would be 0), more digits than a double holds
 *   (`9007199254740993` would be …992). One rule for every notation: `100000000000000000000`
 *   is accepted as `1e20` is (exactNumber; docs/design.md#key-derivation says why this is
 *   stricter than RFC 8785's own examples and looser than I-JSON §2.2's integer range);
 * - a lone UTF-16 surrogate, escaped or raw (it has no UTF-8 form, so JCS cannot encode it);
 * - invalid UTF-8, for byte input (decoded with a fatal TextDecoder, never into U+FFFD);
 * - nesting deeper than `maxDepth` arrays and objects (default MAX_JSON_DEPTH).
 *
 * Why not a library: of the maintained parsers, lossless-json keeps number text but accepts a
 * repeated member whose values are equal and recurses (deep input overflows the stack); momoa
 * and json-bigint recurse and merge duplicates; @streamparser/json is iterative but has no
 * duplicate detection and re-encodes strings through UTF-8. The grammar is small, so this is a
 * short tokenizer with an explicit stack: no recursion, whatever the input. On every text it
 * accepts it returns exactly what `JSON.parse` returns (test/core/json-text.test.ts checks that).
 *
 * Pure: no Node built-ins (TextDecoder is a global in Temporal's workflow sandbox too).
 */
import { InputError } from './errors';
import { jsonDepth, MAX_JSON_DEPTH } from './json-limits';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Arrays and objects nested deeper than MAX_JSON_DEPTH (64, core/json-limits.ts: the one limit
 * for arguments and specs) are refused, as text and as values. An object or array counts one
 * level: `{"a":[1]}` is 2 deep.
 */
export { MAX_JSON_DEPTH };

export interface ParseOptions {
  /** How many levels of arrays and objects may nest (default MAX_JSON_DEPTH). */
  maxDepth?: number;
  /** The name of the whole text in errors, e.g. `args` or `stdin` (default `$`). */
  field?: string;
  /** See exactNumber: asked before an integer beyond ±(2^53−1) is accepted (default: accepted). */
  largeIntegers?: () => boolean;
}

/** Largest integer the I-JSON §2.2 range allowed (2^53 − 1); see exactNumber's `largeIntegers`. */
const MAX_EXACT_INTEGER = Number.MAX_SAFE_INTEGER;

/** Parses strict I-JSON text (a string, or UTF-8 bytes) or throws InputError naming where and why. */
export function parseIJson(input: string | Uint8Array, options: ParseOptions = {}): JsonValue {
  const field = options.field ?? '$';
  const text = typeof input === 'string' ? input : decodeUtf8(input, field);
  return new Parser(text, field, options.maxDepth ?? MAX_JSON_DEPTH, options.largeIntegers).parse();
}

/**
 * For values that arrive already parsed (an update's payload, a JS object): plain JSON only,
 * finite numbers, well-formed strings and names, at most `maxDepth` levels of nesting. Recursion
 * is bounded by `maxDepth`, so a cyclic or absurdly deep value is refused, not a stack overflow.
 */
export function assertJsonValue(value: unknown, field = '$', maxDepth = MAX_JSON_DEPTH): asserts value is JsonValue {
  checkValue(value, field, 0, maxDepth);
}

function checkValue(value: unknown, field: string, depth: number, maxDepth: number): void {
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
      if (depth >= maxDepth) throw depthError(field, maxDepth);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) checkValue(value[i], `${field}[${i}]`, depth + 1, maxDepth);
        return;
      }
      const proto = Object.getPrototypeOf(value) as object | null;
      if (proto !== Object.prototype && proto !== null) {
        throw new InputError(field, `be a plain JSON object (got ${proto?.constructor?.name ?? 'object'})`);
      }
      for (const k of Object.keys(value)) {
        assertWellFormed(k, `${field} member name ${JSON.stringify(k)}`);
        checkValue((value as Record<string, unknown>)[k], memberPath(field, k), depth + 1, maxDepth);
      }
      return;
    }
    default:
      throw new InputError(field, `be a JSON value (got ${typeof value})`);
  }
}

function depthRule(maxDepth: number): string {
  return `nest arrays and objects at most ${maxDepth} levels deep`;
}

/** Too deep, naming where; a path of long member names is shortened in the middle (it is repeated in observations and counts). */
function depthError(path: string, maxDepth: number): InputError {
  const shown = path.length <= 240 ? path : `${path.slice(0, 160)}…${path.slice(-60)}`;
  return new InputError(shown, depthRule(maxDepth));
}

/** `args.path`, or `args["a b"]` for a name that is not a plain identifier. */
export function memberPath(base: string, name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? `${base}.${name}` : `${base}[${JSON.stringify(name)}]`;
}

/** A lone surrogate has no UTF-8 encoding; JCS requires well-formed Unicode. */
export function assertWellFormed(s: string, field: string): void {
  if (s.isWellFormed()) return; // fast path (native); the loop below only locates the problem
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      throw new InputError(field, `contain no lone surrogate (high surrogate U+${hex4(c)} at index ${i})`);
    }
    if (c >= 0xdc00 && c <= 0xdfff) throw new InputError(field, `contain no lone surrogate (low surrogate U+${hex4(c)} at index ${i})`);
  }
}

function hex4(c: number): string {
  return c.toString(16).toUpperCase().padStart(4, '0');
}

function decodeUtf8(bytes: Uint8Array, field: string): string {
  try {
    // A leading byte order mark is dropped (RFC 8259 §8.1 allows a parser to ignore it): the same
    // rule for every byte input (stdin, spec files, `settle key`'s arguments and argument files).
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InputError(field, `be valid UTF-8 (${describeInvalidUtf8(bytes) ?? 'an ill-formed sequence'})`);
  }
}

/**
 * Where the first ill-formed UTF-8 sequence begins (Unicode Table 3-7), by the offset of its
 * first byte: a character cut short is reported where it starts, not at the byte after it.
 * Null for well-formed bytes.
 */
export function describeInvalidUtf8(bytes: Uint8Array): string | null {
  const hex = (b: number) => `0x${b.toString(16).padStart(2, '0')}`;
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    const shape = sequenceShape(lead);
    if (shape === null) return `invalid byte ${hex(lead)} at byte offset ${i}`;
    for (let k = 1; k < shape.length; k++) {
      const b = bytes[i + k];
      const [lo, hi] = k === 1 ? shape.second : [0x80, 0xbf];
      if (b !== undefined && b >= lo && b <= hi) continue;
      const seen = Array.from(bytes.subarray(i, i + k), hex).join(' ');
      if (b === undefined)
        return `truncated character at byte offset ${i}: ${seen} starts a ${shape.length}-byte sequence, then the text ends`;
      if (b >= 0x80 && b <= 0xbf) return `invalid sequence ${seen} ${hex(b)} at byte offset ${i} (${shape.why})`;
      return `truncated character at byte offset ${i}: ${seen} starts a ${shape.length}-byte sequence, then ${hex(b)}`;
    }
    i += shape.length;
  }
  return null;
}

/** A lead byte's sequence length, the range its second byte must fall in, and what a byte outside it would encode. */
function sequenceShape(lead: number): { length: number; second: [number, number]; why: string } | null {
  if (lead >= 0xc2 && lead <= 0xdf) return { length: 2, second: [0x80, 0xbf], why: '' };
  if (lead === 0xe0) return { length: 3, second: [0xa0, 0xbf], why: 'an overlong encoding' };
  if (lead === 0xed) return { length: 3, second: [0x80, 0x9f], why: 'an encoded surrogate' };
  if (lead >= 0xe1 && lead <= 0xef) return { length: 3, second: [0x80, 0xbf], why: '' };
  if (lead === 0xf0) return { length: 4, second: [0x90, 0xbf], why: 'an overlong encoding' };
  if (lead >= 0xf1 && lead <= 0xf3) return { length: 4, second: [0x80, 0xbf], why: '' };
  if (lead === 0xf4) return { length: 4, second: [0x80, 0x8f], why: 'beyond U+10FFFF' };
  return null; // a continuation byte, C0/C1 (always overlong) or F5–FF (beyond U+10FFFF)
}

type Frame =
  | { kind: 'array'; value: JsonValue[]; path: string }
  | { kind: 'object'; value: Record<string, JsonValue>; path: string; names: Set<string>; name: string | null };

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** RFC 8259 grammar, I-JSON rules; an explicit stack of open containers instead of recursion. */
class Parser {
  private i = 0;
  private readonly stack: Frame[] = [];

  constructor(
    private readonly text: string,
    private readonly field: string,
    private readonly maxDepth: number,
    private readonly largeIntegers: (() => boolean) | undefined,
  ) {}

  parse(): JsonValue {
    let result: JsonValue | undefined;
    let done = false;
    this.skipWhitespace();
    // Each turn reads one value (opening a container counts as reading its start), then closes
    // every container that ends right after it.
    for (;;) {
      const path = this.currentPath();
      let value: JsonValue | undefined;
      const c = this.text[this.i];
      if (c === '{' || c === '[') {
        if (this.stack.length >= this.maxDepth) throw depthError(path, this.maxDepth);
        this.i++;
        this.skipWhitespace();
        if (c === '[') {
          this.stack.push({ kind: 'array', value: [], path });
          if (this.text[this.i] === ']') {
            this.i++;
            value = this.stack.pop()!.value;
          }
        } else {
          const frame: Frame = { kind: 'object', value: {}, path, names: new Set(), name: null };
          this.stack.push(frame);
          if (this.text[this.i] === '}') {
            this.i++;
            value = this.stack.pop()!.value;
          } else {
            this.readMemberName(frame);
          }
        }
        if (value === undefined) continue; // a non-empty container: read its first value next
      } else {
        value = this.readScalar(path);
      }
      // Attach the value, then close whatever ends here.
      for (;;) {
        const top = this.stack.at(-1);
        if (top === undefined) {
          result = value;
          done = true;
          break;
        }
        this.put(top, value);
        this.skipWhitespace();
        const next = this.text[this.i];
        if (next === ',') {
          this.i++;
          this.skipWhitespace();
          if (top.kind === 'object') this.readMemberName(top);
          break;
        }
        const close = top.kind === 'array' ? ']' : '}';
        if (next !== close) throw this.syntax(`expected ',' or '${close}'`);
        this.i++;
        value = this.stack.pop()!.value;
      }
      if (done) break;
    }
    this.skipWhitespace();
    if (this.i < this.text.length) throw this.syntax('expected the end of the text after the value');
    return result as JsonValue;
  }

  private put(frame: Frame, value: JsonValue): void {
    if (frame.kind === 'array') {
      frame.value.push(value);
      return;
    }
    const name = frame.name!;
    // `__proto__` must become an own member, as JSON.parse makes it, not the prototype.
    if (name === '__proto__') Object.defineProperty(frame.value, name, { value, enumerable: true, writable: true, configurable: true });
    else frame.value[name] = value;
    frame.name = null;
  }

  /** Reads `"name":` inside an object, refusing a name the object already has. */
  private readMemberName(frame: Extract<Frame, { kind: 'object' }>): void {
    if (this.text[this.i] !== '"') throw this.syntax('expected a member name in double quotes');
    const start = this.i;
    const name = this.readString(`${frame.path} member name`);
    if (frame.names.has(name)) {
      throw new InputError(
        memberPath(frame.path, name),
        `occur only once in its object (member name ${JSON.stringify(name)} repeated at offset ${start}; RFC 8785 §3.1 requires I-JSON, whose member names are unique)`,
      );
    }
    frame.names.add(name);
    frame.name = name;
    this.skipWhitespace();
    if (this.text[this.i] !== ':') throw this.syntax("expected ':' after the member name");
    this.i++;
    this.skipWhitespace();
  }

  private readScalar(path: string): JsonValue {
    const c = this.text[this.i];
    if (c === '"') return this.readString(path);
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.readNumber(path);
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return value;
      }
    }
    throw this.syntax(c === undefined ? 'unexpected end of the text, expected a value' : 'expected a value');
  }

  private readString(path: string): string {
    const text = this.text;
    this.i++; // the opening quote
    let out = '';
    let runStart = this.i;
    for (;;) {
      if (this.i >= text.length) throw this.syntax('unterminated string');
      const code = text.charCodeAt(this.i);
      if (code === 0x22) break;
      if (code < 0x20) throw this.syntax('control character in a string (escape it, e.g. \\n)');
      if (code !== 0x5c) {
        this.i++;
        continue;
      }
      out += text.slice(runStart, this.i);
      const e = text[this.i + 1];
      if (e !== undefined && e in ESCAPES) {
        out += ESCAPES[e];
        this.i += 2;
      } else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(this.i + 2, this.i + 6))) {
        out += String.fromCharCode(parseInt(text.slice(this.i + 2, this.i + 6), 16));
        this.i += 6;
      } else {
        throw this.syntax('invalid escape in a string');
      }
      runStart = this.i;
    }
    out += text.slice(runStart, this.i);
    this.i++; // the closing quote
    assertWellFormed(out, path);
    return out;
  }

  private readNumber(path: string): number {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.text);
    if (m === null) throw this.syntax('invalid number');
    const literal = m[0];
    this.i += literal.length;
    const after = this.text[this.i];
    if (after !== undefined && /[0-9.eE+-]/.test(after)) throw this.syntax('invalid number');
    return exactNumber(literal, path, this.largeIntegers);
  }

  private skipWhitespace(): void {
    const text = this.text;
    for (;;) {
      const c = text.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.i++;
    }
  }

  /** Where the next value goes, for errors: `args.a[2]`. */
  private currentPath(): string {
    const top = this.stack.at(-1);
    if (top === undefined) return this.field;
    return top.kind === 'array' ? `${top.path}[${top.value.length}]` : memberPath(top.path, top.name!);
  }

  private syntax(what: string): InputError {
    // Line and column (1-based, in characters) find the place in an editor; the offset stays for tools.
    const before = this.text.slice(0, this.i);
    const line = before.split('\n').length;
    const column = this.i - before.lastIndexOf('\n');
    const where = `line ${line}, column ${column} (offset ${this.i})`;
    const at = this.i < this.text.length ? `${JSON.stringify(this.text.slice(this.i, this.i + 12))} at ${where}` : `the end at ${where}`;
    return new InputError(this.field, `be valid JSON (${what}; found ${at})`);
  }
}

/**
 * The number a JSON number literal denotes, if that decimal value is exactly the one RFC 8785
 * prints for the double it parses to (ECMAScript's shortest round-trip form), in any notation:
 * `1e20`, `100000000000000000000` and `1.0e20` alike. Each double has one such decimal value, so
 * no two numbers accepted here share a key. Refused, with an InputError saying what would have
 * happened: text a double would round (`333333333.33333329`, `9007199254740993`), overflow and
 * underflow. The comparison is on decimal digits and a BigInt exponent, never on floats.
 *
 * `largeIntegers` is asked only for an integer written without a fraction or exponent beyond
 * ±(2^53−1) that passes that rule (the I-JSON §2.2 range refused such integers before); when it
 * says no, the integer is refused as it was. Workflow code passes a patch check there.
 */
export function exactNumber(literal: string, field: string, largeIntegers?: () => boolean): number {
  const value = Number(literal);
  if (!Number.isFinite(value)) throw new InputError(field, `be within the range of an IEEE 754 double (${literal} overflows)`);
  const written = decimal(literal);
  const printed = decimal(String(value)); // ECMAScript's Number::toString, which RFC 8785 prints
  if (
    written.digits === printed.digits &&
    written.exponent === printed.exponent &&
    (written.negative === printed.negative || value === 0)
  ) {
    if (largeIntegers !== undefined && !/[.eE]/.test(literal) && !Number.isSafeInteger(value) && !largeIntegers()) {
      throw new InputError(
        field,
        `be an integer from -${MAX_EXACT_INTEGER} to ${MAX_EXACT_INTEGER} (got ${literal}, which a double holds only approximately; send larger integers as strings)`,
      );
    }
    return value;
  }
  if (value === 0) throw new InputError(field, `be representable as an IEEE 754 double (${literal} underflows to 0)`);
  throw new InputError(
    field,
    `round-trip exactly through an IEEE 754 double (${literal} would be read as ${String(value)}; write that, or send the number as a string)`,
  );
}

/** A decimal number as sign, significant digits (no leading or trailing zeros) and exponent. */
function decimal(text: string): { negative: boolean; digits: string; exponent: bigint } {
  const m = /^(-)?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)!;
  const fraction = m[3] ?? '';
  let digits = (m[2]! + fraction).replace(/^0+/, '');
  let exponent = BigInt(m[4] ?? '0') - BigInt(fraction.length);
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  exponent += BigInt(trailing);
  if (digits === '') exponent = 0n;
  return { negative: m[1] === '-', digits, exponent };
}

/**
 * Tool-call arguments as a model sends them: a JSON string, parsed as strict I-JSON. Workflow code
 * passes a patch check as `largeIntegers` (parseIJson).
 */
export function parseToolArguments(text: string, largeIntegers?: () => boolean): JsonValue {
  return parseIJson(text, { field: 'args', ...(largeIntegers ? { largeIntegers } : {}) });
}

/**
 * Refuses a value nested deeper than `maxDepth` arrays and objects, without recursing (for
 * documents parsed elsewhere, e.g. by JSON.parse, before recursive code walks them).
 */
export function assertJsonDepth(value: unknown, field: string, maxDepth: number): void {
  if (jsonDepth(value, maxDepth) > maxDepth) throw new InputError(field, `${depthRule(maxDepth)} (the limit for this input)`);
}
