/**
 * The file tools against a hostile file system (issue 12, items 5 and 6): a FIFO where a file was
 * expected must not block the worker, and a directory swapped for a symlink between the path check
 * and the access must not lead the edit (or the read) outside. Real files, real Postgres, and a
 * real worker for the FIFO.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SettleClient } from '../../client/index';
import { deriveKey } from '../../core/key';
import type { FileEditArgs, FileEditIntent } from '../../core/tools/file-edit';
import type { Observation } from '../../core/observation';
import { runSettled } from '../../activities/settled/run-settled';
import type { SettledTool } from '../../activities/settled/settled-tool';
import { fileEdit } from '../../activities/tools/file-edit';
import { fileView } from '../../activities/tools/file-view';
import { grepSearch } from '../../activities/tools/grep-search';
import { readTextFile } from '../../activities/tools/text-files';
import { openTestDb, startTestWorker, tempWorkspace, testStore, uniqueId, type RunningWorker } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
let worker: RunningWorker;
beforeAll(async () => {
  worker = await startTestWorker();
});
afterAll(async () => {
  await worker?.stop();
  await db.destroy();
});

function fifoIn(ws: string, name = 'pipe'): string {
  const p = path.join(ws, name);
  execFileSync('mkfifo', [p]);
  return p;
}

describe('a FIFO in the workspace (item 5)', () => {
  it('file_view, grep_search and file_edit refuse it at once instead of waiting for a writer', async () => {
    const ws = tempWorkspace('fifo');
    const fifo = fifoIn(ws);
    fs.writeFileSync(path.join(ws, 'a.txt'), 'needle\n');
    expect(await fileView.run({ path: fifo, offset: 1, limit: 10 }, { workspace: ws })).toMatchObject({
      error: `${fifo}: not a regular file (file_view reads regular files only)`,
    });
    const plan = await fileEdit.plan({ path: fifo, old_str: 'a', new_str: 'b', allow_multiple: false }, { workspace: ws, network: false });
    expect(plan).toMatchObject({ kind: 'answer', result: { error: `${fifo}: not a regular file (file_edit edits regular files only)` } });
    const grep = await grepSearch.run({ pattern: 'needle', path: ws, max_results: 10 }, { workspace: ws });
    expect(JSON.parse(grep.output)).toMatchObject({ files_searched: 1, matches: [{ path: path.join(ws, 'a.txt') }] });
  });

  it('a trajectory editing a FIFO gets an observation, and the worker keeps serving the next call', async () => {
    const ws = tempWorkspace('fifo');
    const fifo = fifoIn(ws);
    fs.writeFileSync(path.join(ws, 'a.txt'), 'v=1\n');
    const settle = new SettleClient(worker.client, worker.taskQueue);
    const id = uniqueId('fifo');
    await settle.start(id, {
      workspace: ws,
      turns: [
        {
          turn: 0,
          calls: [
            { call_id: 'e', tool: 'file_edit', args: { path: fifo, old_str: 'x', new_str: 'y' } },
            { call_id: 'v', tool: 'file_view', args: { path: fifo, offset: 1, limit: 10 } },
            { call_id: 'ok', tool: 'file_edit', args: { path: path.join(ws, 'a.txt'), old_str: 'v=1', new_str: 'v=2' } },
          ],
        },
      ],
    });
    const result = await settle.result(id);
    expect(result.calls.map((c) => [c.callId, c.resolution, c.observation?.error ?? null])).toEqual([
      ['e', 'executed', `${fifo}: not a regular file (file_edit edits regular files only)`],
      ['v', 'read', `${fifo}: not a regular file (file_view reads regular files only)`],
      ['ok', 'executed', null],
    ]);
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('v=2\n');
  });
});

describe('a directory swapped for a symlink after the path check (item 6)', () => {
  /** ws/dir/secret.txt inside; outside/secret.txt with the same content, so a hash check alone cannot tell them apart. */
  function layout() {
    const ws = tempWorkspace('swap');
    const outside = tempWorkspace('swap-outside');
    fs.mkdirSync(path.join(ws, 'dir'));
    fs.writeFileSync(path.join(ws, 'dir', 'secret.txt'), 'token=inside\n');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'token=inside\n');
    const swap = () => {
      fs.renameSync(path.join(ws, 'dir'), path.join(ws, 'dir-moved'));
      fs.symlinkSync(outside, path.join(ws, 'dir'));
    };
    return { ws, outside, swap, file: path.join(ws, 'dir', 'secret.txt') };
  }

  it('file_edit: the swap between the recorded intent and the write leaves the outside file untouched and nothing executed', async () => {
    const { ws, outside, swap, file } = layout();
    // The real file_edit, with the swap done by "another trajectory" right after the intent is
    // planned, before anything is written (the executor prepares the write while it claims).
    const racing: SettledTool<FileEditArgs, FileEditIntent, Observation> = {
      ...fileEdit,
      prepare: async (args, intent, env, at) => {
        swap();
        return fileEdit.prepare!(args, intent, env, at);
      },
    };
    const args: FileEditArgs = { path: file, old_str: 'inside', new_str: 'pwned', allow_multiple: false };
    const trajectoryId = uniqueId('swap');
    const key = deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args });
    const outcome = await runSettled(
      store,
      racing,
      { key, trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args },
      { workspace: ws, network: false },
      { leaseMs: 5_000, holder: 'test' },
    );
    expect(outcome).toMatchObject({
      kind: 'released',
      detail: expect.stringMatching(/changed after it was checked|no longer a directory/),
    });
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('token=inside\n');
    expect(fs.readFileSync(path.join(ws, 'dir-moved', 'secret.txt'), 'utf8')).toBe('token=inside\n');
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']); // no temporary file left there either
    // The record names the real file that was checked.
    expect((await store.get(key))?.intent).toMatchObject({ path: file });
  });

  it('file_view: the swap between the check and the read is refused, the outside file is not shown', async () => {
    const { outside, swap, file } = layout();
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'token=OUTSIDE\n');
    swap();
    // `file` is what the workspace rules approved before the swap; reading it now must not follow the new symlink.
    const read = await readTextFile(file);
    expect(read).toMatchObject({ kind: 'changed', reason: expect.stringContaining(`what opened is ${path.join(outside, 'secret.txt')}`) });
  });

  it('file_edit: a final component swapped for a symlink is refused, not followed', async () => {
    const { ws, outside } = layout();
    const target = path.join(ws, 'dir', 'secret.txt');
    const plan = await fileEdit.plan(
      { path: target, old_str: 'inside', new_str: 'pwned', allow_multiple: false },
      { workspace: ws, network: false },
    );
    if (plan.kind !== 'proceed') throw new Error('expected proceed');
    fs.rmSync(target);
    fs.symlinkSync(path.join(outside, 'secret.txt'), target);
    await expect(
      fileEdit.execute(
        { path: target, old_str: 'inside', new_str: 'pwned', allow_multiple: false },
        plan.intent,
        { workspace: ws, network: false },
        {
          key: 'k',
          generation: 1,
          assertLeaseHeld: () => {},
        },
      ),
    ).rejects.toMatchObject({ name: 'NoEffect' });
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('token=inside\n');
  });
});
