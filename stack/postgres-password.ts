/**
 * The embedded cluster's password: random per data directory, kept owner-only (mode 600) in a
 * file beside the data directory, and reused on restart. A constant password let any process
 * that reached the port (a sandboxed command with the host's network) log in and rewrite the
 * worker's records and budgets.
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

export function passwordFileFor(dataDir: string): string {
  return path.join(path.dirname(dataDir), `${path.basename(dataDir)}.password`);
}

export function clusterPassword(dataDir: string): ClusterPassword {
  const file = passwordFileFor(dataDir);
  if (fs.existsSync(file)) {
    fs.chmodSync(file, 0o600);
    const password = fs.readFileSync(file, 'utf8').trim();
    if (!/^[A-Za-z0-9_-]{32}$/.test(password)) throw new Error(`${file} must hold the cluster's password (32 base64url characters)`);
    return { password, legacy: false, file };
  }
  const password = crypto.randomBytes(24).toString('base64url');
  fs.writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return { password, legacy: fs.existsSync(path.join(dataDir, 'PG_VERSION')), file };
}
