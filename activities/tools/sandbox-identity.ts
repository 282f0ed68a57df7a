/**
 * Who a sandboxed command is on the host. Inside, bubblewrap gives it a new user namespace with
 * no capabilities; outside, its processes and files belong to one host user, and that user is
 * never root: a process mapped to host root keeps root's ownership of every root-owned file and
 * kernel setting (it could write /proc/sys, and RLIMIT_NPROC does not apply to it) even with
 * every capability dropped.
 *
 * - A worker that is not root runs the sandbox as itself (it could not be anyone else).
 * - A worker that is root runs it as the workspace's owner, so the workspace stays writable and
 *   what the command creates belongs to that owner. A workspace owned by root (or group root)
 *   is refused: the operator gives it to an unprivileged user first (`handOverWorkspace` does
 *   that for the workspaces settle creates itself).
 */
import fs from 'node:fs';

export type SandboxIdentity = { kind: 'user'; uid: number; gid: number } | { kind: 'refused'; reason: string };

/**
 * Owner of the workspaces settle creates when it runs as root: 65533 unless SETTLE_SANDBOX_UID/GID
 * say otherwise. Not `nobody` (65534): inside a user namespace every unmapped owner (root's files
 * in /usr) reads as 65534, and the sandbox user must not seem to own them.
 */
export function defaultSandboxOwner(env: NodeJS.ProcessEnv = process.env): { uid: number; gid: number } {
  const uid = positiveId(env.SETTLE_SANDBOX_UID, 'SETTLE_SANDBOX_UID') ?? 65533;
  const gid = positiveId(env.SETTLE_SANDBOX_GID, 'SETTLE_SANDBOX_GID') ?? uid;
  return { uid, gid };
}

/** `owner`: the owner of the opened workspace directory (its fstat, workspace-dir.ts). */
export function sandboxIdentity(workspace: string, owner: { uid: number; gid: number }): SandboxIdentity {
  const self = process.getuid?.();
  if (self === undefined) return { kind: 'refused', reason: 'the sandbox needs a POSIX host (no user ids here)' };
  if (self !== 0) {
    const gid = process.getgid!();
    return gid === 0 ? refuseRootGroup(`the worker's group`) : { kind: 'user', uid: self, gid };
  }
  const { uid, gid } = defaultSandboxOwner();
  if (owner.uid === 0) {
    return {
      kind: 'refused',
      reason:
        `workspace ${workspace} is owned by root, and sandboxed commands never run as root on the host; ` +
        `give it to an unprivileged user (e.g. chown -R ${uid}:${gid} ${workspace}) or run the worker as an unprivileged user`,
    };
  }
  if (owner.gid === 0) return refuseRootGroup(`workspace ${workspace}'s group`);
  return { kind: 'user', uid: owner.uid, gid: owner.gid };
}

/**
 * Gives a directory settle has just created to the sandbox user, when settle runs as root (the
 * demo's, tests' and benchmarks' workspaces). Never for a directory that existed before.
 */
export function handOverWorkspace(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = defaultSandboxOwner();
  fs.chownSync(dir, uid, gid);
}

function refuseRootGroup(what: string): SandboxIdentity {
  return { kind: 'refused', reason: `${what} is root (gid 0), and sandboxed commands never run with group root on the host` };
}

function positiveId(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0 || n >= 2 ** 32 - 1)
    throw new Error(`${name} must be a user or group id > 0 (got ${JSON.stringify(raw)})`);
  return n;
}
