/**
 * Access-time path containment (docs/design.md#path-containment): the lexical rules of core/paths.ts, then symlinks
 * resolved — the target itself, or for a file still to be created its nearest existing
 * ancestor — and the real path must stay inside the real workspace root.
 */
import fs from 'node:fs/promises';
import { closeSync } from 'node:fs';
import path from 'node:path';
import { canonicalPath, isWithin } from '../core/paths';
import { InputError } from '../core/errors';
import { failed, type Observation } from '../core/observation';
import { openWorkspace } from './workspace-dir';

/** A path that escapes the workspace. An observation, never an effect. */
export class PathRefused extends InputError {}

/** The real path inside the workspace, or the refusal as the observation a tool returns. */
export async function resolveForTool(workspaceRoot: string, requested: string): Promise<{ path: string } | { refusal: Observation }> {
  try {
    return { path: await resolveInWorkspace(workspaceRoot, requested) };
  } catch (err) {
    if (err instanceof PathRefused) return { refusal: failed(`refused: ${err.message}`) };
    throw err;
  }
}

export async function resolveInWorkspace(workspaceRoot: string, requested: string, field = 'args.path'): Promise<string> {
  let lexical: string;
  try {
    lexical = canonicalPath(requested, field);
  } catch (err) {
    if (err instanceof InputError) throw new PathRefused(err.field, err.rule);
    throw err;
  }
  const root = canonicalPath(workspaceRoot, 'workspace');
  if (!isWithin(lexical, root)) {
    throw new PathRefused(field, `lie inside the workspace ${root} (got ${lexical})`);
  }
  const realRoot = await fs.realpath(root);
  const real = await realpathOfNearestExisting(lexical, field);
  if (!isWithin(real, realRoot)) {
    throw new PathRefused(field, `resolve inside the workspace ${root} after following symlinks (${lexical} → ${real})`);
  }
  return real;
}

/** The real path of `p`, or for a path still to be created, of its nearest existing ancestor plus the rest. */
export async function realpathOfNearestExisting(p: string, field: string): Promise<string> {
  const rest: string[] = [];
  let current = p;
  while (true) {
    try {
      const real = await fs.realpath(current);
      return rest.length ? path.join(real, ...rest.reverse()) : real;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      // A dangling symlink here must not be treated as "not yet created": refuse to follow it.
      const st = await fs.lstat(current).catch(() => null);
      if (st?.isSymbolicLink()) {
        throw new PathRefused(field, `not pass through a dangling symlink (${current} → ${await fs.readlink(current)})`);
      }
      rest.push(path.basename(current));
      const parent = path.dirname(current);
      if (parent === current) return p;
      current = parent;
    }
  }
}

/**
 * Why `workspace` may not be used on this worker, or null: it must be an existing directory lying
 * strictly inside the operator's workspace root, after symlinks, reached through directories no
 * sandboxed command can write (workspace-dir.ts, docs/security.md#workspaces).
 */
export async function workspaceRefusal(workspace: string, root: string): Promise<string | null> {
  const found = await findWorkspace(workspace, root);
  return found === 'here' ? null : found.refusal;
}

/**
 * workspaceRefusal, telling apart a workspace this worker's disk lacks (`missing`: another host's
 * may hold it) from one its rules refuse wherever it is.
 */
export async function findWorkspace(workspace: string, root: string): Promise<'here' | { refusal: string; missing?: true }> {
  let lexical: string;
  try {
    lexical = canonicalPath(workspace, 'workspace');
  } catch (err) {
    if (err instanceof InputError) return { refusal: err.message };
    throw err;
  }
  const opened = openWorkspace(lexical, root);
  if ('refusal' in opened) return opened;
  closeSync(opened.fd);
  return 'here';
}
