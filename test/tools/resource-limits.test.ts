/**
 * Issue 12 item 12, the worker's side: a hostile pattern or file must not take the worker's event
 * loop or memory from every other trajectory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileEdit } from '../../activities/tools/file-edit';
import { grepSearch, SEARCH_TIME_LIMIT_MS } from '../../activities/tools/grep-search';
import { MAX_TEXT_FILE_BYTES } from '../../activities/tools/text-files';
import { tempWorkspace } from '../support/env';

describe('grep_search', () => {
  afterEach(() => {
    grepSearch.timeLimitMs = SEARCH_TIME_LIMIT_MS;
  });

  it('a catastrophic pattern runs off the event loop: other work proceeds while it is cut at the time limit', async () => {
    grepSearch.timeLimitMs = 2000;
    const ws = tempWorkspace('regex');
    fs.writeFileSync(path.join(ws, 'evil.txt'), `${'a'.repeat(40)}b\n`);
    let searchDone = false;
    const search = grepSearch.run({ pattern: '(a+)+$', path: ws, max_results: 10 }, { workspace: ws }).then((obs) => {
      searchDone = true;
      return obs;
    });
    // Another trajectory's work (a timer standing in for its heartbeat) gets its turn meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const doneBeforeOtherWork = searchDone;
    const obs = await search;
    expect(doneBeforeOtherWork).toBe(false);
    expect(obs.error).toMatch(/search ended after 2000 ms \(time limit\)/);
  });

  it('still finds matches through the search thread', async () => {
    const ws = tempWorkspace('regex');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'one\ntodo two\nthree todo\n');
    const obs = await grepSearch.run({ pattern: 'todo', path: ws, max_results: 10 }, { workspace: ws });
    expect(JSON.parse(obs.output).matches.map((m: { line: number }) => m.line)).toEqual([2, 3]);
  });
});

describe('file_edit', () => {
  it('refuses a file over the size limit before reading it, and leaves it unchanged', async () => {
    const ws = tempWorkspace('big');
    const file = path.join(ws, 'big.txt');
    fs.writeFileSync(file, `needle\n${'x'.repeat(MAX_TEXT_FILE_BYTES)}\n`);
    const before = fs.statSync(file).mtimeMs;
    const plan = await fileEdit.plan({ path: file, old_str: 'needle', new_str: 'pin', allow_multiple: false }, { workspace: ws });
    expect(plan).toMatchObject({
      kind: 'answer',
      result: { exit_status: 1, error: expect.stringMatching(/bytes, over the 5 MiB limit of file_edit/) },
    });
    expect(fs.statSync(file).mtimeMs).toBe(before);
  });
});
