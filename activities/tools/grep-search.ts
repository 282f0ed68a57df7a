/**
 * `grep_search` (A0): regular-expression search returning structured matches.
 *
 * Catastrophic patterns (e.g. `(a+)+$`) are contained by matching in a worker thread that is
 * terminated at the time limit (regex-worker.ts): the search ends with a clear error in bounded
 * time, and the worker's event loop is never blocked meanwhile.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { failed, type Observation } from '../../core/observation';
import { GREP_SEARCH, type GrepSearchArgs } from '../../core/tools/grep-search';
import { resolveForTool } from '../workspace';
import type { ReadOnlyTool } from './read-only-tool';
import { readTextFile } from './text-files';
import { RegexWorker } from './regex-worker';

export const SEARCH_TIME_LIMIT_MS = 10_000;
const MAX_MATCH_CHARS = 500;
const SKIPPED_DIRECTORIES = new Set(['.git']);

export interface GrepMatch {
  path: string;
  /** 1-indexed. */
  line: number;
  text: string;
}

export const grepSearch: ReadOnlyTool<GrepSearchArgs> & { timeLimitMs: number } = {
  name: GREP_SEARCH,
  timeLimitMs: SEARCH_TIME_LIMIT_MS,
  async run(args, env): Promise<Observation> {
    let re: RegExp;
    try {
      re = new RegExp(args.pattern);
    } catch (err) {
      return failed(`args.pattern must be a valid JavaScript regular expression: ${(err as Error).message}`);
    }
    const resolved = await resolveForTool(env.workspace, args.path);
    if ('refusal' in resolved) return resolved.refusal;
    const root = resolved.path;
    const matchesGlob = args.glob ? picomatch(args.glob, { dot: true }) : () => true;
    const deadline = performance.now() + this.timeLimitMs;
    const matcher = new RegexWorker(re);
    const matches: GrepMatch[] = [];
    let filesSearched = 0;
    let filesSkipped = 0;
    try {
      for await (const file of walk(root)) {
        if (matches.length >= args.max_results) break;
        if (!matchesGlob(path.basename(file))) continue;
        const content = await readTextFile(file);
        if (content.kind !== 'text') {
          filesSkipped++;
          continue;
        }
        filesSearched++;
        const result = await matcher.match(content.text, args.max_results - matches.length, deadline - performance.now());
        if (result.kind === 'timeout') {
          return failed(
            `search ended after ${this.timeLimitMs} ms (time limit) in ${file}: the pattern may backtrack catastrophically; ` +
              'simplify it (avoid nested quantifiers like (a+)+) or narrow path/glob',
          );
        }
        const lines = result.lines.length ? content.text.split(/\r?\n/) : [];
        for (const i of result.lines) {
          const line = lines[i] ?? '';
          matches.push({ path: file, line: i + 1, text: line.length > MAX_MATCH_CHARS ? `${line.slice(0, MAX_MATCH_CHARS)}…` : line });
        }
      }
    } finally {
      await matcher.close();
    }

    const truncated = matches.length >= args.max_results;
    const output = JSON.stringify({ matches, files_searched: filesSearched, files_skipped: filesSkipped, truncated });
    return { output, error: null, exit_status: matches.length ? 0 : 1, truncated };
  },
};

/**
 * Regular files under `root` (or `root` itself), in a stable order. Symbolic links are not
 * followed: a link could lead out of the workspace, and a search must not.
 */
async function* walk(root: string): AsyncGenerator<string> {
  const stat = await fs.lstat(root);
  if (stat.isFile()) {
    yield root;
    return;
  }
  if (!stat.isDirectory()) return;
  const entries = (await fs.readdir(root, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of entries) {
    const full = path.join(root, entry.name);
    if (entry.isDirectory() && !SKIPPED_DIRECTORIES.has(entry.name)) yield* walk(full);
    else if (entry.isFile()) yield full;
  }
}
