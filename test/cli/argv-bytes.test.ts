/** cli/argv-bytes.ts on its own: which raw command-line bytes it trusts, and that it fails closed. */
import { describe, expect, it } from 'vitest';
import { assertArgumentsUtf8 } from '../../cli/argv-bytes';

const cmdline =
  (...args: (string | number[])[]) =>
  () =>
    new Uint8Array(args.flatMap((a) => [...(typeof a === 'string' ? Buffer.from(a) : a), 0]));
const argv = (...args: string[]) => ['/usr/bin/node', '/x/bin/settle.js', ...args];
/** Started from a shell: none of the variables a package runner sets (this test run may have them). */
const shell = {};

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
    expect(() => assertArgumentsUtf8(argv('key', '--args', '"c\ufffd"'), latin1, shell)).toThrow(
      '--args must be valid UTF-8 (truncated character at byte offset 2: 0xe9 starts a 3-byte sequence, then 0x22)',
    );
    const real = cmdline('node', 'settle.js', 'key', '--args', '"c\ufffd"');
    expect(() => assertArgumentsUtf8(argv('key', '--args', '"c\ufffd"'), real, shell)).not.toThrow();
  });

  it('refuses rather than guesses when the raw bytes cannot be read or do not match what Node decoded', () => {
    const unreadable = () => {
      throw new Error('ENOENT');
    };
    expect(() => assertArgumentsUtf8(argv('key', '--call-id', 'c\ufffd'), unreadable, shell)).toThrow(
      /^--call-id: contains U\+FFFD and its bytes cannot be read on this system/,
    );
    const retitled = cmdline('settle', 'key', '--call-id', 'other');
    expect(() => assertArgumentsUtf8(argv('key', '--call-id', 'c\ufffd'), retitled, shell)).toThrow(/cannot be read on this system/);
  });

  it('under a package runner (npx, npm run, yarn, pnpm) no raw bytes prove a U+FFFD: refused, naming the option and what to do instead', () => {
    const real = cmdline('node', 'settle.js', 'key', '--args', '"c\ufffd"');
    expect(() =>
      assertArgumentsUtf8(argv('key', '--args', '"c\ufffd"'), real, { npm_execpath: '/usr/lib/node_modules/npm/bin/npm-cli.js' }),
    ).toThrow(
      '--args: contains U+FFFD, and a package runner started settle (npm_execpath is set), which writes U+FFFD for bytes that are not UTF-8 before settle sees them; give the arguments in a file (settle key --args-file FILE)',
    );
    const id = cmdline('node', 'settle.js', 'key', '--call-id', 'c\ufffd');
    expect(() => assertArgumentsUtf8(argv('key', '--call-id', 'c\ufffd'), id, { npm_config_user_agent: 'yarn/4.0.0' })).toThrow(
      /^--call-id: contains U\+FFFD, and a package runner started settle \(npm_config_user_agent is set\).*; run node_modules\/\.bin\/settle directly$/,
    );
    expect(() => assertArgumentsUtf8(argv('key', '--args', '{"a":"é"}'), real, { npm_execpath: 'npm' })).not.toThrow();
  });
});
