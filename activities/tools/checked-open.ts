/**
 * Opening exactly the file a path check approved (issue 12, items 5 and 6).
 *
 * The path rules (activities/workspace.ts) resolve a requested path to a real path inside the
 * workspace; between that check and the open, another process (a sandboxed command of another
 * trajectory) may swap a directory for a symlink, or put a FIFO where a file was. So the file
 * tools never read or write by path after the check. They open the checked real path
 *
 *   - refusing anything but a regular file (lstat before, fstat after: a FIFO, socket or device
 *     would block the worker's I/O threads or mean something else entirely),
 *   - with O_NOFOLLOW (the last component is not followed) and O_NONBLOCK (opening a FIFO that
 *     appears after the lstat returns at once instead of waiting for a writer),
 *
 * and then ask the kernel what they opened (`/proc/self/fd/N`): if that is not the checked real
 * path, a component was swapped in between, and the file is refused. Writes go through a
 * directory descriptor checked the same way (`/proc/self/fd/D/name` resolves through the held
 * directory, like openat), so the object checked is the object written. Linux only, as the
 * sandbox is; without /proc the check fails closed.
 */
import { constants } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** The object behind a path changed between the check and the open (a swapped symlink or directory). */
export class PathChanged extends Error {
  override readonly name = 'PathChanged';
}

export type CheckedFile =
  { kind: 'file'; handle: FileHandle; size: number; mode: number; uid: number; gid: number } | { kind: 'missing' } | { kind: 'not_a_file' };

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Opens `real` (a checked real path) for reading, proving it is that regular file. `via` is the
 * path to open it by (default `real`; a path through a held directory descriptor when writing).
 * The caller closes the handle.
 */
export async function openCheckedFile(real: string, via: string = real): Promise<CheckedFile> {
  const before = await fs.lstat(via).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null;
    throw err;
  });
  if (before === null) return { kind: 'missing' };
  // A symlink here was not one at check time (the check resolved symlinks): the path changed.
  if (before.isSymbolicLink()) throw new PathChanged(`${real} became a symbolic link after it was checked`);
  if (!before.isFile()) return { kind: 'not_a_file' };
  let handle: FileHandle;
  try {
    handle = await fs.open(via, READ_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' };
    if (code === 'ELOOP') throw new PathChanged(`${real} became a symbolic link after it was checked`);
    throw err;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      await handle.close();
      return { kind: 'not_a_file' };
    }
    await assertOpened(handle, real);
    return { kind: 'file', handle, size: stat.size, mode: stat.mode, uid: stat.uid, gid: stat.gid };
  } catch (err) {
    await handle.close().catch(() => {});
    throw err;
  }
}

/** Reads a checked regular file whole; null when it is missing or not a regular file. */
export async function readCheckedFile(real: string, via: string = real): Promise<Buffer | null> {
  const file = await openCheckedFile(real, via);
  if (file.kind !== 'file') return null;
  try {
    return await file.handle.readFile();
  } finally {
    await file.handle.close();
  }
}

/**
 * A directory held open by descriptor, proved to be the checked real directory. Paths made with
 * `at(name)` resolve through the held directory, wherever a swapped path component now points.
 */
export interface CheckedDirectory {
  real: string;
  at(name: string): string;
  /** The names in the held directory. */
  list(): Promise<string[]>;
  /** Throws PathChanged unless the held directory is still at its checked real path. */
  assertStillAt(): Promise<void>;
  close(): Promise<void>;
}

export async function openCheckedDirectory(real: string): Promise<CheckedDirectory> {
  let handle: FileHandle;
  try {
    handle = await fs.open(real, DIR_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw new PathChanged(`${real} is no longer a directory (a symlink or file replaced it)`);
    throw err;
  }
  try {
    await assertOpened(handle, real);
  } catch (err) {
    await handle.close();
    throw err;
  }
  const base = `/proc/self/fd/${handle.fd}`;
  return {
    real,
    at: (name) => {
      if (name.includes('/') || name === '.' || name === '..') throw new Error(`not a plain file name: ${name}`);
      return `${base}/${name}`;
    },
    list: () => fs.readdir(base),
    assertStillAt: () => assertOpened(handle, real),
    close: () => handle.close(),
  };
}

/** The kernel's name for what `handle` opened must be `real` (also catches a directory moved away while held). */
async function assertOpened(handle: FileHandle, real: string): Promise<void> {
  let actual: string;
  try {
    actual = await fs.readlink(`/proc/self/fd/${handle.fd}`);
  } catch (err) {
    throw new PathChanged(`cannot prove which file was opened for ${real} (/proc/self/fd: ${(err as Error).message})`);
  }
  if (actual !== real) throw new PathChanged(`${real} changed after it was checked: what opened is ${actual}`);
}

/** The directory and name of a checked real path. */
export function splitReal(real: string): { dir: string; name: string } {
  return { dir: path.dirname(real), name: path.basename(real) };
}
