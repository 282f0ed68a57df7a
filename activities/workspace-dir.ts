/**
 * A workspace opened by descriptor (docs/security.md#workspaces): what is checked is what the
 * sandbox binds, never a path that is resolved again later.
 *
 * From the worker's workspace root, each component of the workspace's real path is opened
 * relative to the directory held before it (`/proc/self/fd/N/name`, as openat(2) would), never
 * following a symlink, and each directory between the root and the workspace must be one no
 * sandboxed command can write ({@link sandboxCanWrite}); the last descriptor is the workspace.
 * A path swapped while this runs is refused, or yields the directory that was checked.
 *
 * Linux only, as the sandbox and the file tools: without /proc every workspace is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isWithin } from '../core/paths';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants;
const OPEN_DIR = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

export interface OpenedWorkspace {
  /** A descriptor of the workspace directory itself (the caller closes it). */
  fd: number;
  /** Its real path: the kernel's name for the descriptor. */
  path: string;
  /** Owner, mode, device and inode of the opened directory. */
  stat: fs.Stats;
}

/**
 * Opens `workspace` (an absolute, canonical path) inside `root` (the policy's real root) by
 * descriptor and checks what was opened. A refusal is one line naming the workspace and the rule.
 */
export function openWorkspace(workspace: string, root: string): OpenedWorkspace | { refusal: string; missing?: true } {
  let real: string;
  try {
    // One realpath(3), in place (not through libuv's thread pool): this runs on every call.
    real = fs.realpathSync.native(workspace);
  } catch {
    // Missing here: on several hosts, another host's disk may hold it (factory/hosts.ts).
    return { refusal: `workspace ${workspace} must be an existing directory`, missing: true };
  }
  if (real === root || !isWithin(real, root)) {
    return {
      refusal: `workspace ${workspace}${real === workspace ? '' : ` (→ ${real})`} must lie inside the worker's workspace root ${root} (SETTLE_WORKSPACE_ROOT, set by the worker's operator)`,
    };
  }
  let fd: number;
  try {
    fd = fs.openSync(root, O_RDONLY | O_DIRECTORY);
  } catch (err) {
    return { refusal: `workspace ${workspace}: the workspace root ${root} cannot be opened (${code(err)})` };
  }
  let at = root;
  try {
    // Every return below leaves `fd` to the finally, except the workspace's own, handed to the caller.
    for (const name of path.relative(root, real).split('/')) {
      if (at !== root) {
        const writable = sandboxCanWrite(fs.fstatSync(fd));
        if (writable)
          return {
            refusal: `workspace ${workspace} passes through ${at}, which a sandboxed command can write (${writable}); ${ANCESTOR_RULE}`,
          };
      }
      const next = openIn(fd, name);
      fs.closeSync(fd);
      fd = -1;
      at = path.join(at, name);
      if (typeof next === 'string') {
        return {
          refusal:
            next === 'ELOOP'
              ? `workspace ${workspace} must not pass through a symlink below the workspace root (${at} is one now)`
              : `workspace ${workspace} must be an existing directory (${at}: ${next})`,
        };
      }
      fd = next;
    }
    const stat = fs.fstatSync(fd);
    // The kernel's name for what was opened: a rename during the walk shows here.
    const opened = fs.readlinkSync(`/proc/self/fd/${fd}`);
    if (opened !== real) return { refusal: `workspace ${workspace} moved while it was opened (${real} → ${opened})` };
    const result = { fd, path: real, stat };
    fd = -1;
    return result;
  } catch (err) {
    return { refusal: `workspace ${workspace} cannot be opened (${code(err)})` };
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
}

/** The rule a refused ancestor breaks, as the operator reads it. */
const ANCESTOR_RULE =
  "directories between the workspace root and a workspace must be writable by their owner only, and owned by a user sandboxed commands never run as (root, or when the worker is not root, another user than the worker's)";

/**
 * Why a sandboxed command could change this directory's entries (rename a workspace on its path,
 * swap one for a symlink), or null. Commands run as the worker's own user when the worker is not
 * root, and as the workspace's owner — any user but root — when it is (sandbox-identity.ts), so:
 * writable by group or others, or owned by such a user. A workspace is one of these, so a
 * workspace nested in another is refused.
 */
export function sandboxCanWrite(stat: fs.Stats): string | null {
  const mode = (stat.mode & 0o7777).toString(8).padStart(4, '0');
  if (stat.mode & 0o022) return `mode ${mode}: its group or others can write it`;
  const self = process.getuid?.();
  if (self === 0 && stat.uid !== 0) return `owned by uid ${stat.uid}: under a root worker, commands run as the owner of their workspace`;
  if (self !== 0 && stat.uid === self) return `owned by the worker's own user (uid ${self}), as which sandboxed commands run`;
  return null;
}

/** openat(dirFd, name, O_DIRECTORY | O_NOFOLLOW): the descriptor, or the error code. */
function openIn(dirFd: number, name: string): number | string {
  try {
    return fs.openSync(`/proc/self/fd/${dirFd}/${name}`, OPEN_DIR);
  } catch (err) {
    return code(err);
  }
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}
