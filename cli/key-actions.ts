/** What `settle key` and `settle canonicalize` do (declared in cli/main.ts). */
import { canonicalJson } from '../core/jcs';
import { parseIJson } from '../core/json-text';
import { deriveKey } from '../core/key';
import { InputError } from '../core/errors';
import { UsageError } from './usage-error';
import { assertArgumentsUtf8 } from './argv-bytes';
import { readFileOrStdin, readStdin } from './stdin';

export interface KeyOptions {
  trajectory: string;
  turn: number;
  callId: string;
  tool: string;
  args?: string;
  argsFile?: string;
  secretEnv?: string;
}

export async function printKey(opts: KeyOptions): Promise<void> {
  // Bytes, strictly decoded: Node reads an invalid byte on the command line as U+FFFD, which
  // would give `caf\xe9` and `caf\xe8` one key (cli/argv-bytes.ts).
  assertArgumentsUtf8();
  // Strict I-JSON (core/json-text.ts): a repeated member or a rounded number would give another call's key.
  const argsFlag = opts.args !== undefined ? '--args' : '--args-file';
  const bytes = await argsBytes(opts);
  const args = withField(() => parseIJson(bytes, { field: 'args' }), { args: argsFlag });
  let secret: Uint8Array | undefined;
  if (opts.secretEnv !== undefined) {
    const value = process.env[opts.secretEnv];
    if (!value) throw new UsageError(`--secret-env: environment variable ${opts.secretEnv} must be set and non-empty`);
    secret = new TextEncoder().encode(value);
  }
  const key = withField(
    () =>
      deriveKey(
        { trajectoryId: opts.trajectory, turn: opts.turn, callId: opts.callId, tool: opts.tool, args: args as Record<string, unknown> },
        secret,
      ),
    { trajectory_id: '--trajectory', turn: '--turn', call_id: '--call-id', tool: '--tool', args: argsFlag },
  );
  console.log(key);
}

export async function canonicalize(): Promise<void> {
  // Bytes, not a string: invalid UTF-8 is refused rather than read as U+FFFD.
  const bytes = await readStdin();
  const value = withField(() => parseIJson(bytes, { field: 'stdin' }), {});
  process.stdout.write(withField(() => canonicalJson(value, 'stdin'), {}) + '\n');
}

/**
 * The bytes of `--args` or of the file `--args-file` names (exactly one of them). `--args` is
 * lossless UTF-8 once assertArgumentsUtf8 has passed, so encoding it again gives the bytes the
 * shell passed: both then meet the byte rules of canonicalize (a leading BOM is dropped).
 */
async function argsBytes(opts: { args?: string; argsFile?: string }): Promise<Uint8Array> {
  if ((opts.args === undefined) === (opts.argsFile === undefined)) throw new UsageError('--args or --args-file: give exactly one of them');
  if (opts.args !== undefined) return new TextEncoder().encode(opts.args);
  const file = opts.argsFile!;
  try {
    return await readFileOrStdin(file);
  } catch (err) {
    throw new UsageError(`--args-file: cannot read ${file === '-' ? 'stdin' : file} (${(err as Error).message})`);
  }
}

/** Re-labels an InputError's field with the CLI flag that carried it. */
function withField<T>(fn: () => T, flags: Record<string, string>): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof InputError) {
      const [head, ...rest] = err.field.split(/(?=[.[ ])/);
      const flag = flags[head ?? ''];
      throw new UsageError(`${flag ? flag + (rest.length ? ` (${head}${rest.join('')})` : '') : err.field} must ${err.rule}`);
    }
    throw err;
  }
}
