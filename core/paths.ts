/**
 * Canonical absolute paths and segment-wise containment (docs/design.md#path-containment). Pure string rules; the
 * symlink part of containment needs the file system and lives in activities/workspace.ts.
 *
 * Why segment-wise: a plain prefix test lets `/work` "contain" `/workspace` (CVE-2025-53110 style).
 * Why NFC first: a check done before Unicode normalisation can be bypassed (CWE-176).
 */
import { InputError } from './errors';

export const MAX_PATH_LENGTH = 4096;
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * Returns the NFC form of `p` after checking it is canonical: absolute, no NUL, no empty, `.`
 * or `..` segments (so no trailing slash and no `//`). The root `/` itself is allowed.
 */
export function canonicalPath(p: unknown, field = 'path'): string {
  if (typeof p !== 'string') throw new InputError(field, 'be a string');
  if (p.length === 0) throw new InputError(field, 'be non-empty');
  if (p.length > MAX_PATH_LENGTH) throw new InputError(field, `be at most ${MAX_PATH_LENGTH} characters`);
  if (p.includes('\0')) throw new InputError(field, 'contain no NUL character');
  // ASCII text is its own NFC form; normalize() costs as much as the rest of the check.
  const nfc = NON_ASCII.test(p) ? p.normalize('NFC') : p;
  if (!nfc.startsWith('/')) throw new InputError(field, `be an absolute path (got ${JSON.stringify(p)})`);
  if (nfc === '/') return nfc;
  // Every empty, `.` or `..` segment shows as `//`, `/.` or a trailing `/`: without any, the path
  // is canonical and the segments need not be split out (the check at every capability access).
  if (!nfc.includes('//') && !nfc.includes('/.') && !nfc.endsWith('/')) return nfc;
  for (const segment of nfc.slice(1).split('/')) {
    if (segment === '') throw new InputError(field, `have no empty segment (no "//" and no trailing "/"; got ${JSON.stringify(p)})`);
    if (segment === '.' || segment === '..') {
      throw new InputError(field, `have no "${segment}" segment (got ${JSON.stringify(p)})`);
    }
  }
  return nfc;
}

/** True when canonical `target` is `container` or lies below it, compared segment by segment. */
export function isWithin(target: string, container: string): boolean {
  if (container === '/') return target.startsWith('/');
  return target === container || target.startsWith(container + '/');
}
