/**
 * The source text's listings through the linter, verbatim (fixtures copied from its 列表 1 and
 * 列表 5; see docs/design.md#typed-tool-interface), and our own published catalog.
 *
 * Both listings are introduced as following the five rules; both leave strings (and one
 * integer) without an upper bound, which is rule 3. Nothing else fires.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lintDocument } from '../../workbench/lint/index';
import { publishedCatalog } from '../../core/tools/catalog';

const fixture = (name: string): unknown => JSON.parse(fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'));

describe('source listing 1 (file_edit, one definition with $schema beside its parameters)', () => {
  it('breaks rule 3 only: old_str and new_str have no maxLength', () => {
    const { tools, findings } = lintDocument(fixture('listing1.json'));
    expect(tools).toBe(1);
    expect(findings.map((f) => [f.severity, f.rule, f.tool, f.pointer])).toEqual([
      ['error', 'bounded-types', 'file_edit', '/parameters/properties/old_str'],
      ['error', 'bounded-types', 'file_edit', '/parameters/properties/new_str'],
    ]);
  });
});

describe('source listing 5 (the four-tool catalog)', () => {
  it('breaks rule 3 only: unbounded paths, edit strings and glob, and an offset without a maximum', () => {
    const { tools, findings } = lintDocument(fixture('listing5.json'));
    expect(tools).toBe(4);
    expect(findings.map((f) => [f.severity, f.rule, f.tool, f.pointer, f.message])).toEqual([
      [
        'error',
        'bounded-types',
        'file_view',
        '/tools/1/parameters/properties/path',
        'string has no upper bound (no maxLength, pattern, enum or const)',
      ],
      ['error', 'bounded-types', 'file_view', '/tools/1/parameters/properties/offset', 'integer has no maximum'],
      [
        'error',
        'bounded-types',
        'file_edit',
        '/tools/2/parameters/properties/path',
        'string has no upper bound (no maxLength, pattern, enum or const)',
      ],
      [
        'error',
        'bounded-types',
        'file_edit',
        '/tools/2/parameters/properties/old_str',
        'string has no upper bound (no maxLength, pattern, enum or const)',
      ],
      [
        'error',
        'bounded-types',
        'file_edit',
        '/tools/2/parameters/properties/new_str',
        'string has no upper bound (no maxLength, pattern, enum or const)',
      ],
      [
        'error',
        'bounded-types',
        'grep_search',
        '/tools/3/parameters/properties/path',
        'string has no upper bound (no maxLength, pattern, enum or const)',
      ],
      [
        'error',
        'bounded-types',
        'grep_search',
        '/tools/3/parameters/properties/glob',
        'string has no upper bound (no maxLength, pattern, enum or const)',
      ],
    ]);
  });
});

describe('our catalog', () => {
  it('lints clean: no findings at all', () => {
    const { tools, findings } = lintDocument(publishedCatalog());
    expect(tools).toBe(5);
    expect(findings).toEqual([]);
  });
});
