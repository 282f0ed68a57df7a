/**
 * The embedded cluster's passwords: random per data directory, kept owner-only (mode 600, set when
 * the file is created, before the password is written) in files beside the data directory, and
 * reused on restart. A constant password let any process that reached the port (a sandboxed
 * command with the host's network) log in and rewrite the worker's records and budgets.
 *
 * Two passwords: the cluster's superuser (`postgres`), used only by the stack to set the cluster
 * up, and settle's own role, which owns settle's database and tables and is not a superuser
 * (it cannot read server files such as `/proc/<pid>/environ`).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The password of clusters initialised before passwords were random; replaced at their next start. */
export const LEGACY_PASSWORD = 'settle';

export interface ClusterPassword {
  password: string;
  /** The cluster still has the legacy password: start with it, then change it to `password`. */
  legacy: boolean;
  file: string;
}

/** The superuser's password file. */
export function passwordFileFor(dataDir: string): string {
  return path.join(path.dirname(dataDir), `${path.basename(dataDir)}.password`);
}

/** The password file of settle's own role. */
export function rolePasswordFileFor(dataDir: string): string {
  return path.join(path.dirname(dataDir), `${path.basename(dataDir)}.settle-role.password`);
}

/** The superuser's password; `legacy` when the cluster exists but had no password file yet. */
export function clusterPassword(dataDir: string): ClusterPassword {
  const file = passwordFileFor(dataDir);
  const { password, created } = readOrCreate(file);
  return { password, legacy: created && fs.existsSync(path.join(dataDir, 'PG_VERSION')), file };
}

/** The password of settle's own role. */
export function rolePassword(dataDir: string): string {
  return readOrCreate(rolePasswordFileFor(dataDir)).password;
}

function readOrCreate(file: string): { password: string; created: boolean } {
  if (fs.existsSync(file)) {
    fs.chmodSync(file, 0o600);
    const password = fs.readFileSync(file, 'utf8').trim();
    if (!/^[A-Za-z0-9_-]{32}$/.test(password)) throw new Error(`${file} must hold a password of 32 base64url characters`);
    return { password, created: false };
  }
  const password = crypto.randomBytes(24).toString('base64url');
  fs.writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return { password, created: true };
}
