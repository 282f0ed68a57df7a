/**
 * `settle mcp serve --workspace DIR`: settle's own tools over MCP, driven by the official SDK
 * client against the real stack. Effects are counted at the effect: file_edit replaces the first
 * `count:` with `count:I`, so every execution adds one `I` to the file.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { SettlePlugin } from '../../api/worker';
import { SettleClient } from '../../client/index';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { runSettle } from '../support/cli';
import { sign } from '../../activities/capability/signer';
import type { KeyRing } from '../../activities/capability/keyring';
import { closeGateways, startGateway, textOf } from './gateway-process';

const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  await closeGateways();
  await db.destroy();
});

describe('settle mcp serve --workspace', () => {
  it("serves settle's tools on DIR: an edit runs once per call id, reads read, and the capability and DIR bound every path", async () => {
    const dir = tempWorkspace('mcp-ws');
    const granted = path.join(dir, 'granted');
    fs.mkdirSync(granted);
    const counter = path.join(granted, 'counter.txt');
    fs.writeFileSync(counter, 'count:\n');
    fs.writeFileSync(path.join(dir, 'secret.txt'), 'not granted\n');
    // Outside DIR, and granted by the capability: only the workspace keeps the call out.
    const outside = tempWorkspace('mcp-ws-outside');
    fs.writeFileSync(path.join(outside, 'x.txt'), 'count:\n');

    const trajectory = uniqueId('mcp-ws');
    const secret = crypto.randomBytes(32);
    const ring: KeyRing = { signingKid: 'k1', keys: new Map([['k1', secret]]) };
    const token = sign(
      {
        v: 1,
        aud: trajectory,
        rights: ['read', 'write'],
        objects: [`path:${granted}`, `path:${outside}`],
        pred: { max_cost: 10, budget: 100 },
        exp: Date.now() + 3_600_000,
        parent: null,
        depth: 0,
      },
      ring,
    );
    const capFile = path.join(outside, 'cap.json');
    fs.writeFileSync(capFile, JSON.stringify(token));
    const gateway = await startGateway(['--workspace', dir, '--capability', capFile, '--task-queue', uniqueId('mcp-ws')], {
      SETTLE_CAP_KEYS: `k1:${secret.toString('base64')}`,
    });

    // Listed with the catalog's schemas; read-only is said of A0 tools only.
    const { tools } = await gateway.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual(['bash_execute', 'file_edit', 'file_view', 'grep_search', 'http_request']);
    expect(byName.get('file_view')?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('file_edit')?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get('file_edit')?.inputSchema.required).toEqual(expect.arrayContaining(['path', 'old_str', 'new_str']));
    expect(byName.get('file_edit')?._meta?.['io.settle/level']).toBe('A2');

    const edit = { path: counter, old_str: 'count:', new_str: 'count:I' };
    const first = await gateway.call('file_edit', edit, 'edit-1');
    const again = await gateway.call('file_edit', edit, 'edit-1');
    expect(first.isError, textOf(first)).toBeFalsy();
    expect(fs.readFileSync(counter, 'utf8')).toBe('count:I\n');
    expect(again._meta?.['io.settle/key']).toBe(first._meta?.['io.settle/key']);
    const record = await store.get(first._meta?.['io.settle/key'] as string);
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 1, tool: 'file_edit' });

    const view = await gateway.call('file_view', { path: counter, offset: 1, limit: 10 });
    expect(view.isError, textOf(view)).toBeFalsy();
    expect(textOf(view)).toContain('count:I');
    expect(view._meta?.['io.settle/resolution']).toBe('read');

    // Inside DIR, but not granted: the capability refuses, nothing is read.
    const notGranted = await gateway.call('file_view', { path: path.join(dir, 'secret.txt'), offset: 1, limit: 10 });
    expect(notGranted.isError).toBe(true);
    expect(textOf(notGranted)).toMatch(/denied by capability/);
    expect(textOf(notGranted)).not.toContain('not granted');

    // Out of DIR: through `..`, and by a path the capability grants; the file is untouched.
    const traversal = await gateway.call('file_edit', { ...edit, path: `${dir}/../${path.basename(outside)}/x.txt` }, 'edit-2');
    expect(traversal.isError).toBe(true);
    expect(textOf(traversal)).toMatch(/"\.\." segment/);
    const elsewhere = await gateway.call('file_edit', { ...edit, path: path.join(outside, 'x.txt') }, 'edit-3');
    expect(elsewhere.isError).toBe(true);
    expect(textOf(elsewhere)).toContain(`lie inside the workspace ${dir}`);
    expect(fs.readFileSync(path.join(outside, 'x.txt'), 'utf8')).toBe('count:\n');
    expect(fs.readFileSync(counter, 'utf8')).toBe('count:I\n');
    await gateway.close();
  }, 180_000);

  it('refuses bad flags with one line naming them', async () => {
    const dir = tempWorkspace('mcp-ws-flags');
    const cases: [string[], string][] = [
      [['--workspace', dir, '--upstream', 'npx server', '--ungated'], '--upstream, --workspace: give one, not both'],
      [['--workspace', path.join(dir, 'missing'), '--ungated'], '--workspace: must name an existing directory'],
      [['--workspace', dir, '--ungated', '--approval-timeout', '10 minutes'], '--approval-timeout: must be a duration like 30m'],
    ];
    for (const [args, message] of cases) {
      const result = await runSettle(['mcp', 'serve', ...args]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(message);
    }
  }, 60_000);

  it("a worker given its operator's workspace refuses a trajectory naming another one", async () => {
    const dir = tempWorkspace('mcp-ws-own');
    const other = tempWorkspace('mcp-ws-other');
    for (const d of [dir, other]) fs.writeFileSync(path.join(d, 'x.txt'), 'hello\n');
    const taskQueue = uniqueId('mcp-ws-own');
    const native = await NativeConnection.connect({ address: inject('temporalAddress') });
    const policy = makeWorkerPolicy({ workspaceRoot: testWorkspaceRoot(), modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: false });
    const worker = await Worker.create({
      plugins: [new SettlePlugin({ databaseUrl: inject('databaseUrl'), policy, workspace: dir, keyRing: null, warn: () => {} })],
      connection: native,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    const running = worker.run();
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const settle = new SettleClient(new Client({ connection }), taskQueue);
      const view = (workspace: string) => [
        { call_id: 'view', tool: 'file_view', args: { path: path.join(workspace, 'x.txt'), offset: 1, limit: 5 } },
      ];
      const own = uniqueId('own');
      await settle.start(own, { workspace: dir });
      const [allowed] = (await settle.runTurn(own, 0, view(dir))).calls;
      expect(allowed?.observation?.output).toContain('hello');
      const foreign = uniqueId('foreign');
      await settle.start(foreign, { workspace: other });
      const [refused] = (await settle.runTurn(foreign, 0, view(other))).calls;
      expect(refused?.resolution).toBe('denied');
      expect(refused?.observation?.error).toContain(`this worker runs calls in its operator's workspace ${dir} only`);
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
      await native.close();
    }
  }, 120_000);
});
