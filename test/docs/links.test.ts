/**
 * The project carries its own design: no tracked file refers to the old contract outside the
 * repository, every relative Markdown link points to a file (and heading) that exists, and every
 * `docs/design.md#anchor` cited in code names a heading of docs/design.md.
 *
 * The checkers are run on small bad inputs first, so a checker that finds nothing cannot pass.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '../..');

/** References to the starting contract and notes that lived outside the repository. */
const OUTSIDE_REFERENCES = [/\.\.\/shared\//, /\/work\/shared\b/, /\bDESIGN\.md\b/, /\bANCHORS\.md\b/];
const DESIGN_CITATION = /docs\/design\.md#([A-Za-z0-9_-]+)/g;

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  return out
    .split('\0')
    .filter(Boolean)
    .filter((f) => !f.split('/').includes('node_modules'));
}

function readText(file: string): string | null {
  const full = path.join(ROOT, file);
  if (!fs.existsSync(full)) return null; // deleted in the work tree, not yet committed
  const buffer = fs.readFileSync(full);
  // A binary file (an image) exists all the same; only Markdown is searched for headings.
  return buffer.includes(0) ? '' : buffer.toString('utf8');
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown: string): { line: number; text: string }[] {
  const lines: { line: number; text: string }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((text, i) => {
    if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
    else if (!fenced) lines.push({ line: i + 1, text });
  });
  return lines;
}

/**
 * GitHub's heading anchors (lowercase, punctuation dropped, spaces to hyphens, repeats numbered),
 * plus explicit `<a id="…">` anchors, which GitHub also resolves.
 */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    for (const a of text.matchAll(/<a (?:id|name)="([^"]+)"><\/a>/g)) anchors.add(a[1]!);
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (!m) continue;
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/**
 * Problems with the relative links of one Markdown file (external links and mail are not checked).
 * `read` gives a file's text, '' for a directory, null for what does not exist.
 */
function brokenLinks(file: string, markdown: string, read: (file: string) => string | null): string[] {
  const problems: string[] = [];
  for (const { line, text } of proseLines(markdown)) {
    for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = pathPart === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), pathPart));
      const where = `${file}:${line}: ${target}`;
      if (resolved.startsWith('../') || path.posix.isAbsolute(resolved)) {
        problems.push(`${where} points outside the repository`);
        continue;
      }
      const content = pathPart === '' ? markdown : read(resolved.replace(/\/$/, ''));
      if (content === null) {
        problems.push(`${where} points to a file that does not exist`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !headingAnchors(content).has(anchor)) {
        problems.push(`${where} names no heading of ${resolved}`);
      }
    }
  }
  return problems;
}

/** Lines that refer to the old contract outside the repository. */
function outsideReferences(file: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((l, i) => (OUTSIDE_REFERENCES.some((re) => re.test(l)) ? [`${file}:${i + 1}: ${l.trim().slice(0, 120)}`] : []));
}

/** `docs/design.md#anchor` citations whose anchor is not a heading of the design. */
function missingDesignAnchors(file: string, text: string, anchors: Set<string>): string[] {
  return text
    .split('\n')
    .flatMap((l, i) => [...l.matchAll(DESIGN_CITATION)].filter((m) => !anchors.has(m[1]!)).map((m) => `${file}:${i + 1}: #${m[1]}`));
}

describe('the checkers find what they look for', () => {
  it('computes GitHub heading anchors', () => {
    expect([...headingAnchors('# settle — design\n## Fencing and leases\n```\n## not a heading\n```\n### States\n### States\n')]).toEqual([
      'settle--design',
      'fencing-and-leases',
      'states',
      'states-1',
    ]);
    expect([...headingAnchors('<a id="egress"></a>**Egress** text\n```\n<a id="in-code"></a>\n```\n')]).toEqual(['egress']);
  });

  it('reports a link to a missing file, outside the repo, or to a missing heading', () => {
    const files: Record<string, string> = { 'docs/design.md': '# Design\n## Key derivation\n' };
    const read = (f: string) => files[f] ?? null;
    const md = [
      '[ok](design.md#key-derivation) [web](https://example.com) [self](#top)',
      '[gone](missing.md)',
      '[out](../../shared/DESIGN.md)',
      '[anchor](design.md#no-such-heading)',
    ].join('\n');
    expect(brokenLinks('docs/x.md', `# Top\n${md}`, read)).toEqual([
      'docs/x.md:3: missing.md points to a file that does not exist',
      'docs/x.md:4: ../../shared/DESIGN.md points outside the repository',
      'docs/x.md:5: design.md#no-such-heading names no heading of docs/design.md',
    ]);
  });

  it('reports references to the old contract and citations of missing anchors', () => {
    const source = ['// see DESIGN.md §2', '// docs/design.md#key-derivation', '// docs/design.md#gone', 'const x = 1;'].join('\n');
    expect(outsideReferences('a.ts', source)).toEqual(['a.ts:1: // see DESIGN.md §2']);
    expect(missingDesignAnchors('a.ts', source, new Set(['key-derivation']))).toEqual(['a.ts:3: #gone']);
  });
});

describe('the repository carries its own design', () => {
  const files = trackedFiles();
  const designText = readText('docs/design.md');
  const self = path.relative(ROOT, SELF);
  const others = files.filter((f) => f !== self);
  // Tracked files only (a fresh clone has nothing else); a directory counts when it holds one.
  const read = (f: string) => (files.includes(f) ? readText(f) : files.some((t) => t.startsWith(`${f}/`)) ? '' : null);

  it('has docs/design.md', () => {
    expect(designText).not.toBeNull();
  });

  it('no tracked file refers to ../shared/, DESIGN.md or ANCHORS.md outside the repository', () => {
    const found = others.flatMap((f) => outsideReferences(f, readText(f) ?? ''));
    expect(found).toEqual([]);
  });

  it('every relative link in README.md and docs/*.md points to an existing file and heading', () => {
    const markdown = files.filter((f) => f === 'README.md' || /^docs\/[^/]+\.md$/.test(f));
    expect(markdown).toContain('README.md');
    expect(markdown.flatMap((f) => brokenLinks(f, readText(f) ?? '', read))).toEqual([]);
  });

  it('every docs/design.md#anchor cited in the repository is a heading of docs/design.md', () => {
    const anchors = headingAnchors(designText ?? '');
    const cited = others.flatMap((f) => [...(readText(f) ?? '').matchAll(DESIGN_CITATION)]);
    expect(cited.length).toBeGreaterThan(20);
    expect(others.flatMap((f) => missingDesignAnchors(f, readText(f) ?? '', anchors))).toEqual([]);
  });
});
