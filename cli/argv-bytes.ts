/**
 * Command-line arguments as the bytes the shell passed. Node decodes argv itself and turns every
 * ill-formed UTF-8 sequence into U+FFFD, so `caf\xe9`, `caf\xe8` and `caf\ufffd` all arrive as
 * the one string `caf�`: a key derived from that string would be shared by different inputs.
 *
 * Decoding is lossless exactly when the decoded text has no U+FFFD (UTF-8 is a bijection on
 * well-formed bytes, and every ill-formed sequence becomes at least one U+FFFD). Only an argument
 * with U+FFFD needs its raw bytes: on Linux they are in /proc/self/cmdline, whose last entries
 * are the script's arguments. Where they cannot be read, or do not decode to what Node gave,
 * the argument is refused rather than guessed at (fail closed).
 */
import fs from 'node:fs';
import { describeInvalidUtf8 } from '../core/json-text';
import { UsageError } from './usage-error';

/**
 * Refuses any of the script's arguments (process.argv after the script) that is not valid UTF-8,
 * naming its option and the first bad byte. `cmdline` is for tests; by default /proc/self/cmdline.
 */
export function assertArgumentsUtf8(argv: readonly string[] = process.argv, cmdline: () => Uint8Array = readCmdline): void {
  const args = argv.slice(2);
  if (!args.some((a) => a.includes('\ufffd'))) return;
  let raw: Uint8Array[];
  try {
    raw = lastEntries(cmdline(), args.length);
  } catch {
    raw = [];
  }
  const lossy = new TextDecoder('utf-8');
  const trustworthy = raw.length === args.length && raw.every((bytes, i) => lossy.decode(bytes) === args[i]);
  for (let i = 0; i < args.length; i++) {
    if (!args[i]!.includes('\ufffd')) continue;
    const { name, prefix } = argumentName(args, i);
    if (!trustworthy) {
      throw new UsageError(
        `${name}: contains U+FFFD and its bytes cannot be read on this system to tell it from invalid UTF-8; give it in a file (settle key --args-file)`,
      );
    }
    const problem = describeInvalidUtf8(raw[i]!.subarray(prefix));
    if (problem !== null) throw new UsageError(`${name} must be valid UTF-8 (${problem})`);
  }
}

/** `--args` for the value after `--args` or in `--args=…` (whose value starts `prefix` bytes in), else the argument's position. */
function argumentName(args: readonly string[], i: number): { name: string; prefix: number } {
  const own = /^(--?[A-Za-z][\w-]*)=/.exec(args[i]!);
  if (own) return { name: own[1]!, prefix: own[0].length };
  const before = args[i - 1];
  if (before !== undefined && /^--?[A-Za-z][\w-]*$/.test(before)) return { name: before, prefix: 0 };
  return { name: `argument ${i + 1}`, prefix: 0 };
}

function readCmdline(): Uint8Array {
  return fs.readFileSync('/proc/self/cmdline');
}

/** The last `n` NUL-terminated entries of a cmdline. */
function lastEntries(cmdline: Uint8Array, n: number): Uint8Array[] {
  const entries: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i < cmdline.length; i++) {
    if (cmdline[i] !== 0) continue;
    entries.push(cmdline.subarray(start, i));
    start = i + 1;
  }
  if (start < cmdline.length) entries.push(cmdline.subarray(start));
  return n === 0 ? [] : entries.slice(-n);
}
