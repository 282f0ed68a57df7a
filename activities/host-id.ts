/**
 * This worker's host id (core/hosts.ts): SETTLE_HOST_ID when its operator sets it, else derived
 * from what differs between machines, containers and mount namespaces without configuration —
 * the machine id, the host name, and the device and inode of the workspace root as this process
 * sees it. Two workers that see the same workspace root directory (one machine, or storage shared
 * the same way) may share an id; two that see different directories never do by default.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { HOST_ID_VARIABLE, parseHostId } from '../core/hosts';

const MACHINE_ID_FILES = ['/etc/machine-id', '/var/lib/dbus/machine-id'];

export function hostIdFor(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  const set = env[HOST_ID_VARIABLE];
  if (set !== undefined && set !== '') return parseHostId(set);
  return derivedHostId(workspaceRoot);
}

/** `<host name>-<12 hex>`: readable, and the hash tells apart hosts that share a name. */
export function derivedHostId(workspaceRoot: string): string {
  // A root that cannot be read yet still yields an id; every workspace in it is refused anyway.
  const root = (() => {
    try {
      const st = fs.statSync(workspaceRoot, { bigint: true });
      return `${st.dev}:${st.ino}`;
    } catch {
      return `missing:${workspaceRoot}`;
    }
  })();
  const parts = [machineId(), os.hostname(), root];
  const digest = crypto.createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 12);
  const name =
    os
      .hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 40) || 'host';
  return `${name}-${digest}`;
}

function machineId(): string {
  for (const file of MACHINE_ID_FILES) {
    try {
      const id = fs.readFileSync(file, 'utf8').trim();
      if (id) return id;
    } catch {
      // absent in many containers: the host name and the root's inode still tell them apart
    }
  }
  return '';
}
