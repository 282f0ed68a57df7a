/** cli/argv-bytes.ts on its own: which raw command-line bytes it trusts, and that it fails closed. */
import { describe, expect, it } from 'vitest';
import { assertArgumentsUtf8 } from '../../cli/argv-bytes';

const cmdline =
  (...args: (string | number[])[]) =>
  () =>
    new Uint8Array(args.flatMap((a) => [...(typeof a === 'string' ? Buffer.from(a) : a), 0]));
const argv = (...args: string[]) => ['/usr/bin/node', '/x/bin/settle.js', ...args];

describe('assertArgumentsUtf8', () => {
  it('reads no raw bytes when no argument has U+FFFD (decoding was lossless)', () => {
    expect(() =>
      assertArgumentsUtf8(argv('key', '--args', '{"a":"é"}'), () => {
        throw new Error('not read');
      }),
    ).not.toThrow();
  });

  it('tells invalid bytes from a real U+FFFD by the raw command line, naming the option', () => {
    const latin1 = cmdline('node', '--import', 'x', 'settle.js', 'key', '--args', [0x22, 0x63, 0xe9, 0x22]);
    expect(() => assertArgumentsUtf8(argv('key', '--args', '"c\ufffd"'), latin1)).toThrow(
      '--args must be valid UTF-8 (truncated character at byte offset 2: 0xe9 starts a 3-byte sequence, then 0x22)',
    );
    const real = cmdline('node', 'settle.js', 'key', '--args', '"c\ufffd"');
    expect(() => assertArgumentsUtf8(argv('key', '--args', '"c\ufffd"'), real)).not.toThrow();
  });

  it('refuses rather than guesses when the raw bytes cannot be read or do not match what Node decoded', () => {
    const unreadable = () => {
      throw new Error('ENOENT');
    };
    expect(() => assertArgumentsUtf8(argv('key', '--call-id', 'c\ufffd'), unreadable)).toThrow(
      /^--call-id: contains U\+FFFD and its bytes cannot be read on this system/,
    );
    const retitled = cmdline('settle', 'key', '--call-id', 'other');
    expect(() => assertArgumentsUtf8(argv('key', '--call-id', 'c\ufffd'), retitled)).toThrow(/cannot be read on this system/);
  });
});
