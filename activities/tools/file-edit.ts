/**
 * `file_edit` (A2): exact replacement of a block of text, written atomically (temporary file in
 * the same directory, fsync, rename; the file mode is kept).
 *
 * The file is read and written only by descriptor, through the checked real directory
 * (checked-open.ts): never a FIFO or device, never a file a swapped symlink leads to.
 *
 * Intent: path, SHA-256 before, SHA-256 expected after, the temporary file. Probe: first removes
 * the temporary file (a fence: a paused executor's rename then fails), then current hash = after
 * → applied (the result is reconstructed from the intent), = before → not applied, else unknown.
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { FileEditArgs, FileEditIntent } from '../../core/tools/file-edit';
import { FILE_EDIT } from '../../core/tools/file-edit';
import { failed, ok, type Observation } from '../../core/observation';
import type { ProbeVerdict } from '../../core/records';
import { resolveForTool } from '../workspace';
import { openCheckedDirectory, openCheckedFile, PathChanged, splitReal, type CheckedDirectory } from './checked-open';
import { MAX_TEXT_FILE_BYTES } from './text-files';
import { failpoint } from '../failpoints';
import {
  NoEffect,
  type ExecutionContext,
  type Plan,
  type PrepareContext,
  type PreparedEffect,
  type SettledTool,
  type ToolEnv,
} from '../settled/settled-tool';

/** Test hooks around the rename that is the effect (in-process counterparts of the failpoints). */
export const fileEditHooks: {
  beforeRename?: (tmpPath: string, target: string) => Promise<void>;
  /** Between the last lease check and the rename (the window a paused executor may sit in). */
  afterLeaseCheck?: (tmpPath: string, target: string) => Promise<void>;
  afterRename?: (target: string) => Promise<void>;
} = {};

export const fileEdit: SettledTool<FileEditArgs, FileEditIntent, Observation> = {
  name: FILE_EDIT,

  async plan(args, env, at): Promise<Plan<FileEditIntent, Observation>> {
    const resolved = await resolveForTool(env.workspace, args.path);
    if ('refusal' in resolved) return { kind: 'answer', result: resolved.refusal };
    const real = resolved.path;
    let bytes: Buffer | NotAFile | { tooLarge: number };
    try {
      bytes = await readChecked(real);
    } catch (err) {
      if (err instanceof PathChanged) return { kind: 'answer', result: failed(`refused: ${args.path}: ${err.message}`) };
      throw err;
    }
    if (bytes === 'missing') return { kind: 'answer', result: failed(`${args.path}: no such file (file_edit edits existing files only)`) };
    if (bytes === 'not_a_file') {
      return { kind: 'answer', result: failed(`${args.path}: not a regular file (file_edit edits regular files only)`) };
    }
    if ('tooLarge' in bytes) {
      return { kind: 'answer', result: failed(`${args.path}: ${bytes.tooLarge} bytes, over the 5 MiB limit of file_edit`) };
    }
    const before = bytes.toString('utf8');
    if (!Buffer.from(before, 'utf8').equals(bytes)) {
      return { kind: 'answer', result: failed(`${args.path}: not valid UTF-8 text; file_edit leaves it unchanged`) };
    }

    const matches = countOccurrences(before, args.old_str);
    if (matches === 0 || (matches > 1 && !args.allow_multiple)) {
      return { kind: 'answer', result: matchError(args, matches) };
    }
    const after = replace(before, args);
    // Named per execution, so a probe can find it (and withdraw it) from the intent alone; and
    // after the call, so a retried attempt can withdraw one its dead predecessor never recorded.
    const tmp_path = path.join(path.dirname(real), tmpName(path.basename(real), at?.key));
    // The intent names the real file: the one the execution opens, proves and writes.
    return {
      kind: 'proceed',
      intent: { path: real, sha256_before: sha256(before), sha256_after: sha256(after), matches, tmp_path },
    };
  },

  async execute(args, intent, _env: ToolEnv, ctx: ExecutionContext): Promise<Observation> {
    return (await prepareEdit(args, intent, { key: ctx.key, retried: false })).apply(ctx);
  },

  // Writing and syncing the temporary file has no effect on the target: it may overlap the claim.
  prepare: (args, intent, _env, at) => prepareEdit(args, intent, at),

  async probe(args, intent): Promise<ProbeVerdict<Observation>> {
    // Fence first: withdraw the prepared file, so an executor paused between its lease check and
    // the rename can no longer apply the edit after this verdict. If the rename already happened,
    // there is nothing to withdraw and the file's hash tells.
    if (intent.tmp_path) await fs.rm(intent.tmp_path, { force: true });
    let bytes: Buffer | NotAFile | { tooLarge: number };
    try {
      bytes = await readChecked(intent.path);
    } catch (err) {
      if (err instanceof PathChanged) return { verdict: 'unknown', detail: err.message };
      throw err;
    }
    if (bytes === 'missing') return { verdict: 'unknown', detail: `${intent.path} no longer exists` };
    if (bytes === 'not_a_file') return { verdict: 'unknown', detail: `${intent.path} is no longer a regular file` };
    if ('tooLarge' in bytes) return { verdict: 'unknown', detail: `${intent.path} grew to ${bytes.tooLarge} bytes` };
    const hash = sha256(bytes.toString('utf8'));
    if (hash === intent.sha256_after) {
      return { verdict: 'applied', result: resultFor(args, intent), detail: `sha256 ${short(hash)} = expected after` };
    }
    if (hash === intent.sha256_before) {
      return { verdict: 'not_applied', detail: `sha256 ${short(hash)} = recorded before` };
    }
    return {
      verdict: 'unknown',
      detail: `sha256 ${short(hash)} matches neither before ${short(intent.sha256_before)} nor after ${short(intent.sha256_after)}`,
    };
  },
};

/**
 * Prepares the edit — the target's pre-state checked, the new content written and synced to the
 * intent's temporary file beside it — and returns the rename that is the effect. Nothing here
 * changes the target: every failure is NoEffect, and the temporary file is removed.
 */
async function prepareEdit(args: FileEditArgs, intent: FileEditIntent, at: PrepareContext): Promise<PreparedEffect<Observation>> {
  const { dir: realDir, name } = splitReal(intent.path);
  const tmpReal = intent.tmp_path ?? path.join(realDir, `.${name}.settle-${process.pid}-${crypto.randomUUID().slice(0, 8)}.tmp`);
  if (path.dirname(tmpReal) !== realDir)
    throw new NoEffect(`the intent's temporary file ${tmpReal} is not beside ${intent.path}; not writing`);
  // Every read and write below goes through this descriptor, proved to be the checked
  // directory: a component swapped for a symlink meanwhile cannot redirect the edit.
  let dir: CheckedDirectory;
  try {
    dir = await openCheckedDirectory(realDir);
  } catch (err) {
    throw new NoEffect(`${args.path}: ${(err as Error).message}; not writing`);
  }
  const target = dir.at(name);
  const tmp = dir.at(path.basename(tmpReal));
  /** Removes the temporary file and lets go of the directory (the directory is closed even if the removal fails). */
  const withdraw = () => fs.rm(tmp, { force: true }).finally(() => dir.close());
  /** Before the rename, whatever failed (permissions, a full disk, a lost lease, a swapped path) provably had no effect. */
  const abandon = async (err: unknown): Promise<never> => {
    await withdraw();
    if (err instanceof NoEffect) throw err;
    throw new NoEffect(`could not prepare the edit of ${args.path}, file not touched: ${(err as Error).message}`);
  };
  try {
    if (at.retried) await withdrawUnrecorded(dir, name, at.key, path.basename(tmpReal));
    const current = await readCheckedWithMode(intent.path, target);
    if (current === 'too_large') throw new NoEffect(`${args.path} grew over the 5 MiB limit of file_edit; not writing`);
    if (current === null || sha256(current.bytes.toString('utf8')) !== intent.sha256_before) {
      // Changed since the intent was planned; nothing written yet.
      throw new NoEffect(`${args.path} changed after its intent was recorded; not writing`);
    }
    const next = replace(current.bytes.toString('utf8'), args);
    const handle = await fs.open(tmp, 'wx', current.mode & 0o7777);
    try {
      await handle.writeFile(next);
      // A root worker keeps the file's owner, so the (unprivileged) sandbox user can still write it.
      if (process.getuid?.() === 0) await handle.chown(current.uid, current.gid);
      await handle.chmod(current.mode & 0o7777); // umask may have narrowed the mode at open (and chown clears set-id bits)
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (err) {
    return abandon(err);
  }
  return {
    discard: withdraw,
    apply: async (ctx) => {
      try {
        await fileEditHooks.beforeRename?.(tmpReal, intent.path);
        await failpoint('file_edit.before_rename');
        // Compare-and-swap as far as a file system allows: the pre-state must still hold, the
        // directory must still be the checked one, and so must our lease, right before the rename
        // that is the effect.
        const latest = await readCheckedWithMode(intent.path, target);
        if (latest === null || latest === 'too_large' || sha256(latest.bytes.toString('utf8')) !== intent.sha256_before) {
          throw new NoEffect(`${args.path} changed while the edit was prepared; not writing`);
        }
        await dir.assertStillAt();
        ctx.assertLeaseHeld();
      } catch (err) {
        return abandon(err);
      }
      try {
        await fileEditHooks.afterLeaseCheck?.(tmpReal, intent.path);
        await failpoint('file_edit.after_lease_check');
        try {
          await fs.rename(tmp, target);
        } catch (err) {
          // The prepared file is gone: a probe withdrew it (this executor was paused past its lease
          // after the check above) and settled the call without us. Nothing was written.
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
            throw new NoEffect(`the prepared edit of ${args.path} was withdrawn by a probe while this executor was paused; not written`);
          }
          throw err;
        }
      } finally {
        await dir.close();
      }
      await fileEditHooks.afterRename?.(intent.path);
      await failpoint('file_edit.after_rename');
      return resultFor(args, intent);
    },
  };
}

/** `.notes.txt.settle-<key prefix>-<random>.tmp`: unique per execution, and found by the call's key. */
function tmpName(base: string, key: string | undefined): string {
  const unique = crypto.randomUUID().replaceAll('-', '').slice(0, 12);
  return key ? `${tmpPrefix(base, key)}${unique}.tmp` : `.${base}.settle-${unique}.tmp`;
}

function tmpPrefix(base: string, key: string): string {
  return `.${base}.settle-${key.slice(0, 12)}-`;
}

/**
 * A retried attempt removes the temporary files earlier attempts of the same call left beside the
 * target. Removing one is exactly the probe's fence: if its executor still lives, its rename fails
 * (ENOENT, no effect) and the call is released; if it is dead and never won its claim, the file was
 * litter no record names.
 */
async function withdrawUnrecorded(dir: CheckedDirectory, base: string, key: string, own: string): Promise<void> {
  const prefix = tmpPrefix(base, key);
  for (const entry of await dir.list()) {
    if (entry !== own && entry.startsWith(prefix) && entry.endsWith('.tmp')) await fs.rm(dir.at(entry), { force: true });
  }
}

type NotAFile = 'missing' | 'not_a_file';

/** The bytes of the regular file at the checked real path (checked-open.ts), within the size cap; throws PathChanged. */
async function readChecked(real: string): Promise<Buffer | NotAFile | { tooLarge: number }> {
  const file = await openCheckedFile(real);
  if (file.kind !== 'file') return file.kind;
  try {
    if (file.size > MAX_TEXT_FILE_BYTES) return { tooLarge: file.size };
    return await file.handle.readFile();
  } finally {
    await file.handle.close();
  }
}

/** Bytes, mode and owner of the checked file, opened through a held directory; null when it is gone or not a regular file. */
async function readCheckedWithMode(
  real: string,
  via: string,
): Promise<{ bytes: Buffer; mode: number; uid: number; gid: number } | null | 'too_large'> {
  const file = await openCheckedFile(real, via);
  if (file.kind !== 'file') return null;
  try {
    if (file.size > MAX_TEXT_FILE_BYTES) return 'too_large';
    return { bytes: await file.handle.readFile(), mode: file.mode, uid: file.uid, gid: file.gid };
  } finally {
    await file.handle.close();
  }
}

function resultFor(args: FileEditArgs, intent: FileEditIntent): Observation {
  const n = intent.matches;
  return ok(`replaced ${n} block${n === 1 ? '' : 's'} in ${args.path}`);
}

function matchError(args: FileEditArgs, matches: number): Observation {
  const rule = args.allow_multiple ? 'at least one' : 'exactly one';
  return failed(`old_str matched ${matches} blocks in ${args.path} (${rule} required); file left unchanged`);
}

function replace(text: string, args: FileEditArgs): string {
  // split/join: no regex and no `$&`-style replacement patterns in new_str.
  return args.allow_multiple ? text.split(args.old_str).join(args.new_str) : text.replace(args.old_str, () => args.new_str);
}

export function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) count++;
  return count;
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');
const short = (hash: string) => `${hash.slice(0, 12)}…`;
