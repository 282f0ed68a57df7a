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
 *
 * Those bytes are only the shell's when the shell started settle. A package runner (npx, npm
 * exec, npm run; yarn and pnpm alike) is a Node program too: it decodes the command line first
 * and passes U+FFFD on as the valid bytes EF BF BD, and it retitles its own process, so no raw
 * bytes are left anywhere to tell a typed U+FFFD from an invalid byte. Under a runner (it sets
 * npm_execpath or npm_config_user_agent for what it starts) every U+FFFD is refused.
 */
import fs from 'node:fs';
import { describeInvalidUtf8 } from '../core/json-text';
import { UsageError } from './usage-error';

/**
 * Refuses any of the script's arguments (process.argv after the script) that is not valid UTF-8,
 * naming its option and the first bad byte. `cmdline` and `env` are for tests; by default
 * /proc/self/cmdline and process.env.
 */
export function assertArgumentsUtf8(
  argv: readonly string[] = process.argv,
  cmdline: () => Uint8Array = readCmdline,
  env: NodeJS.ProcessEnv = process.env,
): void {
  const args = argv.slice(2);
  if (!args.some((a) => a.includes('\ufffd'))) return;
  const runner = RUNNER_VARIABLES.find((v) => env[v] !== undefined);
  if (runner) throw underRunner(args, runner);
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

/** What npm, yarn and pnpm set in the environment of a command they start. */
const RUNNER_VARIABLES = ['npm_execpath', 'npm_config_user_agent'] as const;

/** The refusal of the first argument with U+FFFD when a package runner decoded the command line first. */
function underRunner(args: readonly string[], runner: string): UsageError {
  const { name } = argumentName(
    args,
    args.findIndex((a) => a.includes('\ufffd')),
  );
  const instead =
    name === '--args' ? 'give the arguments in a file (settle key --args-file FILE)' : 'run node_modules/.bin/settle directly';
  return new UsageError(
    `${name}: contains U+FFFD, and a package runner started settle (${runner} is set), which writes U+FFFD for bytes that are not UTF-8 before settle sees them; ${instead}`,
  );
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
