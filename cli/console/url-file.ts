/**
 * Where `settle dev` leaves its console's URL: an owner-only file, never its output. The URL
 * carries the access token and the secret host name the cookie is bound to, and `settle dev`'s
 * output is the kind that ends up in logs (a terminal's scrollback, a recorded session, CI).
 */
import fs from 'node:fs';
import path from 'node:path';
import { SETTLE_DIR } from '../../stack/paths';

export const CONSOLE_URL_FILE = path.join(SETTLE_DIR, 'console-url');

/** Owner-only (0600), also over a file an earlier run left with wider permissions. */
export function writeConsoleUrl(url: string, file = CONSOLE_URL_FILE): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeFileSync(fd, `${url}\n`);
  } finally {
    fs.closeSync(fd);
  }
}

export function removeConsoleUrl(file = CONSOLE_URL_FILE): void {
  fs.rmSync(file, { force: true });
}
