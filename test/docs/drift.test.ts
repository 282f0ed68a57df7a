/**
 * The documents keep up with the code: every environment variable the code reads is in
 * docs/configuration.md (and every `SETTLE_*` row there is still read), and the layout table of
 * docs/design.md names every top-level folder and every file of `workflows/`.
 *
 * The extractors are run on small inputs first, so a checker that finds nothing cannot pass.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '../..');

/** settle's own namespaces; PATH, HOME and the like are not configuration. */
const OWN = /^(SETTLE_|TEMPORAL_|OTEL_|DATABASE_URL$)/;
/** Variables that tests set only to read them back (fixtures, not configuration). */
const FIXTURES = new Set(['SETTLE_TEST_SECRET', 'SETTLE_LINT_UNSET_4711']);

function tracked(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f && fs.existsSync(path.join(ROOT, f)));
}

/** Variables a source text reads: `env.NAME`, `env['NAME']`, or a quoted name in settle's namespaces (a constant later used as `env[CONST]`). */
export function variablesRead(source: string): Set<string> {
  const found = new Set<string>();
  for (const m of source.matchAll(/\benv\??\.([A-Z][A-Z0-9_]*[A-Z0-9])\b|\benv\[['"]([A-Z][A-Z0-9_]*[A-Z0-9])['"]\]/g))
    found.add((m[1] ?? m[2])!);
  for (const m of source.matchAll(/['"`]((?:SETTLE|TEMPORAL|OTEL)_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL)['"`]/g)) found.add(m[1]!);
  return new Set([...found].filter((v) => OWN.test(v) && !FIXTURES.has(v)));
}

/** Backticked names in the first column of the Markdown tables; `PREFIX_*` stands for a family. */
export function documentedVariables(markdown: string): string[] {
  const names: string[] = [];
  for (const line of markdown.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1];
    if (!first) continue;
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*\*?)`/g)) names.push(m[1]!);
  }
  return names;
}

const covers = (documented: string[], name: string) =>
  documented.some((d) => (d.endsWith('*') ? name.startsWith(d.slice(0, -1)) : d === name));

/** First-column paths of the Layout table in docs/design.md (`core/`, `workflows/trajectory.ts`, …). */
export function layoutEntries(design: string): string[] {
  const section = design.split(/^## /m).find((s) => s.startsWith('Layout\n'));
  if (!section) return [];
  const entries: string[] = [];
  for (const line of section.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1];
    if (first) for (const m of first.matchAll(/`([^`]+)`/g)) entries.push(m[1]!);
  }
  return entries;
}

describe('the drift checkers find what they look for', () => {
  it('reads variables from member access, index access and named constants, in settle namespaces only', () => {
    const read = variablesRead(
      "process.env.DATABASE_URL; env['SETTLE_A']; const V = 'SETTLE_B'; env?.TEMPORAL_X; env.PATH; const SETTLE_DIR = 1; 'SETTLE_TEST_SECRET'",
    );
    expect([...read].sort()).toEqual(['DATABASE_URL', 'SETTLE_A', 'SETTLE_B', 'TEMPORAL_X']);
  });

  it('reads the first column of tables, with families', () => {
    const docs = documentedVariables('| `SETTLE_A`, `TEMPORAL_TLS_*` | x | `SETTLE_NOT_FIRST_COLUMN` |\n| other | `SETTLE_B` |');
    expect(docs).toEqual(['SETTLE_A', 'TEMPORAL_TLS_*']);
    expect(covers(docs, 'TEMPORAL_TLS_CERT')).toBe(true);
    expect(covers(docs, 'SETTLE_B')).toBe(false);
  });

  it('reads the layout table and nothing outside it', () => {
    const design =
      '## Layout\n\n| path | x |\n|---|---|\n| `core/` | y |\n| `workflows/a.ts`, `workflows/b.ts` | z |\n\n## Next\n| `cli/` | w |\n';
    expect(layoutEntries(design)).toEqual(['core/', 'workflows/a.ts', 'workflows/b.ts']);
  });
});

describe('the documents match the code', () => {
  const files = tracked();

  it('every variable the code reads is in docs/configuration.md, and every SETTLE_* row there is read', () => {
    const read = new Map<string, string>();
    // Not bench/ (its BENCH_* knobs are documented with it), nor this file's own examples.
    for (const f of files.filter((f) => /\.(ts|js|mjs)$/.test(f) && !f.startsWith('bench/') && path.join(ROOT, f) !== SELF)) {
      for (const v of variablesRead(fs.readFileSync(path.join(ROOT, f), 'utf8'))) if (!read.has(v)) read.set(v, f);
    }
    expect(read.size).toBeGreaterThan(20);
    const documented = documentedVariables(fs.readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8'));
    const undocumented = [...read].filter(([v]) => !covers(documented, v)).map(([v, f]) => `${v} (read in ${f})`);
    expect(undocumented).toEqual([]);
    const stale = documented.filter((d) => d.startsWith('SETTLE_') && !d.endsWith('*') && !read.has(d));
    expect(stale).toEqual([]);
  });

  it('the layout table of docs/design.md names every top-level folder and every workflows/ file', () => {
    const entries = new Set(layoutEntries(fs.readFileSync(path.join(ROOT, 'docs/design.md'), 'utf8')));
    const folders = new Set(files.filter((f) => f.includes('/') && !f.startsWith('.')).map((f) => `${f.split('/')[0]}/`));
    const workflowFiles = files.filter((f) => f.startsWith('workflows/'));
    expect(folders.size).toBeGreaterThan(5);
    expect(workflowFiles.length).toBeGreaterThan(3);
    const missing = [...folders, ...workflowFiles].filter((p) => !entries.has(p));
    expect(missing).toEqual([]);
  });
});
