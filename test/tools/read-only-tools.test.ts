/** file_view and grep_search (A0) against real files. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileView } from '../../activities/tools/file-view';
import { grepSearch, SEARCH_TIME_LIMIT_MS, type GrepMatch } from '../../activities/tools/grep-search';
import { tempWorkspace } from '../support/env';

function workspaceWith(files: Record<string, string | Buffer>): string {
  const ws = tempWorkspace('tools');
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), content);
  }
  return ws;
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

describe('file_view', () => {
  it('returns a 1-indexed window with the total line count and a continuation marker', async () => {
    const ws = workspaceWith({ 'a.txt': lines(12) });
    const obs = await fileView.run({ path: path.join(ws, 'a.txt'), offset: 3, limit: 4 }, { workspace: ws });
    expect(obs).toEqual({
      output: '3\tline 3\n4\tline 4\n5\tline 5\n6\tline 6\n[lines 3-6 of 12; 6 more — continue with offset 7]',
      error: null,
      exit_status: 0,
      truncated: true,
    });
  });

  it('ends at the end of the file without truncation, and cuts very long lines', async () => {
    const ws = workspaceWith({ 'a.txt': `short\n${'x'.repeat(2500)}\n` });
    const obs = await fileView.run({ path: path.join(ws, 'a.txt'), offset: 1, limit: 500 }, { workspace: ws });
    expect(obs.output).toMatch(/^1\tshort\n2\tx{2000} \[… line cut at 2000 characters\]\n\[lines 1-2 of 2; end of file\]$/);
    expect(obs.truncated).toBe(true);
  });

  it('reports an offset past the end, a missing file, a binary file, and a path outside the workspace', async () => {
    const ws = workspaceWith({ 'a.txt': lines(2), 'b.bin': Buffer.from([1, 0, 2]) });
    const run = (p: string, offset = 1) => fileView.run({ path: p, offset, limit: 10 }, { workspace: ws });
    expect((await run(path.join(ws, 'a.txt'), 5)).error).toBe(`offset 5 is past the end of ${path.join(ws, 'a.txt')} (2 lines)`);
    expect((await run(path.join(ws, 'nope.txt'))).error).toMatch(/no such file/);
    expect((await run(path.join(ws, 'b.bin'))).error).toMatch(/binary file/);
    expect((await run('/etc/passwd')).error).toMatch(/^refused: args\.path must lie inside the workspace/);
  });
});

describe('grep_search', () => {
  afterEach(() => {
    grepSearch.timeLimitMs = SEARCH_TIME_LIMIT_MS;
  });

  const parse = (output: string) =>
    JSON.parse(output) as { matches: GrepMatch[]; files_searched: number; files_skipped: number; truncated: boolean };

  it('returns structured matches (path, 1-indexed line, text) with a glob filter', async () => {
    const ws = workspaceWith({
      'src/a.ts': 'const x = 1;\nexport const todo = 2;\n',
      'src/b.md': 'todo: write docs\n',
      'c.ts': 'nothing\n',
    });
    const obs = await grepSearch.run({ pattern: 'todo', path: ws, glob: '*.ts', max_results: 100 }, { workspace: ws });
    expect(obs.exit_status).toBe(0);
    expect(parse(obs.output)).toEqual({
      matches: [{ path: path.join(ws, 'src/a.ts'), line: 2, text: 'export const todo = 2;' }],
      files_searched: 2,
      files_skipped: 0,
      truncated: false,
    });
  });

  it('bounds the result count and line length, and skips binary files', async () => {
    const ws = workspaceWith({
      'many.txt': Array(50)
        .fill(`hit ${'y'.repeat(800)}`)
        .join('\n'),
      'bin.dat': Buffer.from('hit\0hit'),
    });
    const obs = await grepSearch.run({ pattern: '^hit', path: ws, max_results: 7 }, { workspace: ws });
    const result = parse(obs.output);
    expect(result.matches).toHaveLength(7);
    expect(result.matches[0]!.text).toHaveLength(501);
    expect(result.truncated).toBe(true);
    expect(obs.truncated).toBe(true);
    expect(result.files_skipped).toBe(1);
  });

  it('does not follow symbolic links out of the workspace', async () => {
    const outside = workspaceWith({ 'secret.txt': 'password=hunter2\n' });
    const ws = workspaceWith({ 'a.txt': 'nothing\n' });
    fs.symlinkSync(outside, path.join(ws, 'link'));
    const obs = await grepSearch.run({ pattern: 'password', path: ws, max_results: 10 }, { workspace: ws });
    expect(parse(obs.output).matches).toEqual([]);
    expect(obs.exit_status).toBe(1);
    const direct = await grepSearch.run(
      { pattern: 'password', path: path.join(ws, 'link', 'secret.txt'), max_results: 10 },
      { workspace: ws },
    );
    expect(direct.error).toMatch(/^refused: .*after following symlinks/);
  });

  it('ends a catastrophic pattern with a clear error in bounded time', async () => {
    grepSearch.timeLimitMs = 300;
    const ws = workspaceWith({ 'evil.txt': `${'a'.repeat(40)}b\n` });
    const started = performance.now();
    const obs = await grepSearch.run({ pattern: '(a+)+$', path: ws, max_results: 10 }, { workspace: ws });
    const elapsed = performance.now() - started;
    expect(obs.error).toMatch(/search ended after 300 ms \(time limit\).*backtrack catastrophically/);
    // Without the limit this pattern runs for hours; the generous bound only proves it was cut.
    expect(elapsed).toBeLessThan(20_000);
  });

  it('reports an invalid regular expression by field', async () => {
    const ws = workspaceWith({ 'a.txt': 'x' });
    const obs = await grepSearch.run({ pattern: '(unclosed', path: ws, max_results: 10 }, { workspace: ws });
    expect(obs.error).toMatch(/^args\.pattern must be a valid JavaScript regular expression/);
  });
});
