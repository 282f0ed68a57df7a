/**
 * canonicalPath's fast paths (ASCII skips NFC normalisation; a path without `//`, `/.` or a
 * trailing `/` skips the segment split) against the plain definition: normalise, then check
 * every segment. Same value or the same error, for any path.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalPath, isWithin } from '../../core/paths';
import { InputError } from '../../core/errors';

function reference(p: string): string {
  if (p.length === 0) throw new InputError('path', 'be non-empty');
  if (p.length > 4096) throw new InputError('path', 'be at most 4096 characters');
  if (p.includes('\0')) throw new InputError('path', 'contain no NUL character');
  const nfc = p.normalize('NFC');
  if (!nfc.startsWith('/')) throw new InputError('path', `be an absolute path (got ${JSON.stringify(p)})`);
  if (nfc === '/') return nfc;
  for (const segment of nfc.slice(1).split('/')) {
    if (segment === '') throw new InputError('path', `have no empty segment (no "//" and no trailing "/"; got ${JSON.stringify(p)})`);
    if (segment === '.' || segment === '..') throw new InputError('path', `have no "${segment}" segment (got ${JSON.stringify(p)})`);
  }
  return nfc;
}

const outcome = (f: () => string) => {
  try {
    return { value: f() };
  } catch (err) {
    return { error: (err as Error).message };
  }
};

describe('canonicalPath', () => {
  it('gives the value or the error of the plain definition for any path (property)', () => {
    const piece = fc.oneof(
      fc.constantFrom('/', '.', '..', '//', '/.', '/..', 'a', '.git', '..x', 'e\u0301', 'é', '\u212b', '😀', '\0', ' '),
      fc.string({ maxLength: 4 }),
      fc.string({ unit: 'binary', maxLength: 3 }),
    );
    const paths = fc.oneof(
      fc.array(piece, { maxLength: 10 }).map((xs) => xs.join('')),
      fc.array(piece, { maxLength: 10 }).map((xs) => '/' + xs.join('')),
      fc.array(piece, { maxLength: 6 }).map((xs) => '/' + xs.join('/')),
    );
    fc.assert(
      fc.property(paths, (p) => {
        expect(outcome(() => canonicalPath(p))).toEqual(outcome(() => reference(p)));
      }),
      { numRuns: 5000 },
    );
  });

  it('normalises to NFC and refuses empty, . and .. segments', () => {
    expect(canonicalPath('/ws/e\u0301')).toBe('/ws/é');
    expect(canonicalPath('/ws/.hidden/..x')).toBe('/ws/.hidden/..x');
    expect(() => canonicalPath('/ws/')).toThrow(/no empty segment/);
    expect(() => canonicalPath('/ws/./a')).toThrow(/no "\." segment/);
    expect(() => canonicalPath('/ws/..')).toThrow(/no "\.\." segment/);
    expect(isWithin(canonicalPath('/work/a'), '/work')).toBe(true);
    expect(isWithin(canonicalPath('/workspace'), '/work')).toBe(false);
  });
});
