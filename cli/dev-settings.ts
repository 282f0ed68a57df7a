/**
 * `settle dev` writes its connection settings here so other commands (`settle records`,
 * `settle show`, …) find the running stack without copying URLs around. Removed on stop.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SETTLE_DIR } from '../stack/paths';

export interface DevSettings {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  databaseUrl: string;
  uiUrl: string | null;
  pid: number;
  /** The development operator key's file (cli/operator-key.ts): `settle resolve`/`approve` sign with it. */
  operatorKeyFile?: string;
}

export const DEV_SETTINGS_FILE = path.join(SETTLE_DIR, 'dev.json');

/**
 * Owner-only (0600): the database URL carries its password. A file left world-readable by an older
 * version is narrowed too, before the new settings go in.
 */
export function writeDevSettings(settings: DevSettings, file = DEV_SETTINGS_FILE): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeFileSync(fd, JSON.stringify(settings, null, 2) + '\n');
  } finally {
    fs.closeSync(fd);
  }
}

/** The settings of a `settle dev` that is still running, or null. */
export function readDevSettings(): DevSettings | null {
  try {
    const settings = JSON.parse(fs.readFileSync(DEV_SETTINGS_FILE, 'utf8')) as DevSettings;
    process.kill(settings.pid, 0); // throws if that process is gone
    return settings;
  } catch {
    return null;
  }
}

export function removeDevSettings(): void {
  fs.rmSync(DEV_SETTINGS_FILE, { force: true });
}
