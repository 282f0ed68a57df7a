/**
 * `settle mcp serve` in front of real MCP servers from npm (the reference filesystem server, and a
 * server built with the official SDK that lies about its annotations), driven by the official SDK
 * client, against the real stack. Effects are counted at the effect: the edited file's content.
 *
 * The counter: edit_file replaces the first `count:` with `count:I`, so every execution of the
 * edit adds one `I` — the file shows how many times the upstream really ran it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { runSettle } from '../support/cli';
import { until } from '../support/in-doubt';
import { sign } from '../../activities/capability/signer';
import type { KeyRing } from '../../activities/capability/keyring';
import {
  closeGateways,
  FILESYSTEM_SERVER,
  LYING_SERVER,
  nodeCommand,
  registryFile,
  startGateway,
  textOf,
  type GatewaySession,
} from './gateway-process';

const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  await closeGateways();
  await db.destroy();
});

const EDIT = (file: string) => ({ path: file, edits: [{ oldText: 'count:', newText: 'count:I' }] });

/** The operator's registry for the filesystem server: reads are A0, edit_file is A2 with a probe. */
function filesRegistry(otherwise: 'not_applied' | 'unknown' = 'not_applied', probe = true) {
  return {
    server: 'files',
    tools: {
      read_text_file: { level: 'A0' },
      edit_file: {
        level: 'A2',
        ...(probe
          ? { probe: { tool: 'read_text_file', args: { path: { from: '/path' } }, applied_if_contains: '/edits/0/newText', otherwise } }
          : {}),
      },
    },
  };
}

function counterFile(dir: string): string {
  const file = path.join(dir, 'counter.txt');
  fs.writeFileSync(file, 'count:\n');
  return file;
}

function settleMeta(result: { _meta?: Record<string, unknown> }) {
  return { key: result._meta?.['io.settle/key'] as string, resolution: result._meta?.['io.settle/resolution'] as string };
}

describe('settle mcp serve in front of @modelcontextprotocol/server-filesystem', () => {
  it('runs a write tool called twice with the same call id once, and a new call id again', async () => {
    const dir = tempWorkspace('mcp-once');
    const file = counterFile(dir);
    const gateway = await startGateway([
      '--upstream',
      nodeCommand(FILESYSTEM_SERVER, dir),
      '--registry',
      registryFile(dir, filesRegistry()),
      '--ungated',
      '--task-queue',
      uniqueId('mcp-once'),
    ]);
    const tools = await gateway.client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('edit_file');

    const first = await gateway.call('edit_file', EDIT(file), 'edit-1');
    const again = await gateway.call('edit_file', EDIT(file), 'edit-1');
    expect(first.isError, textOf(first)).toBeFalsy();
    expect(fs.readFileSync(file, 'utf8')).toBe('count:I\n');
    expect(settleMeta(again).key).toBe(settleMeta(first).key);
    expect(textOf(again)).toBe(textOf(first));
    const record = await store.get(settleMeta(first).key);
    expect(record?.state).toBe('COMPLETED');
    expect(record?.generation).toBe(1);

    // The counter counts: a new call id is a new call, and runs.
    const other = await gateway.call('edit_file', EDIT(file), 'edit-2');
    expect(other.isError, textOf(other)).toBeFalsy();
    expect(fs.readFileSync(file, 'utf8')).toBe('count:II\n');
    await gateway.close();
  }, 180_000);
});

describe.each([
  // Claimed, the upstream not yet called: the probe does not find the edit, the call runs on gateway B.
  { point: 'settled.after_claim', resolution: 'executed' },
  // The upstream edited the file, the completion not recorded: the probe finds it, nothing runs again.
  { point: 'mcp.after_call', resolution: 'settled_by_probe' },
])('the gateway SIGKILLed at $point in the middle of a call', ({ point, resolution }) => {
  it('leaves the call IN_DOUBT, the probe settles it, and the edit happens exactly once', async () => {
    const dir = tempWorkspace('mcp-kill');
    const file = counterFile(dir);
    const trajectory = uniqueId('mcp-kill');
    const args = [
      '--upstream',
      nodeCommand(FILESYSTEM_SERVER, dir),
      '--registry',
      registryFile(dir, filesRegistry('not_applied')),
      '--ungated',
      '--trajectory',
      trajectory,
      '--task-queue',
      uniqueId('mcp-kill'),
    ];
    const a = await startGateway(args, { SETTLE_FAILPOINTS: `${point}=kill` });
    await expect(a.call('edit_file', EDIT(file), 'edit-1')).rejects.toThrow();
    await a.exited;
    expect(a.stderr()).toContain(`settle failpoint: ${point} → kill`);

    const b = await startGateway(args);
    const result = await b.call('edit_file', EDIT(file), 'edit-1');
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(settleMeta(result).resolution).toBe(resolution);
    expect(fs.readFileSync(file, 'utf8')).toBe('count:I\n');
    const key = settleMeta(result).key;
    expect((await store.get(key))?.state).toBe('COMPLETED');
    const events = await store.events(key);
    expect(events.map((e) => e.toState)).toContain('IN_DOUBT');
    await b.close();
  }, 240_000);
});

describe('an in-doubt call no probe can settle', () => {
  it('waits for the operator (settle resolve), and the edit is never repeated', async () => {
    const dir = tempWorkspace('mcp-operator');
    const file = counterFile(dir);
    const trajectory = uniqueId('mcp-operator');
    const args = [
      '--upstream',
      nodeCommand(FILESYSTEM_SERVER, dir),
      '--registry',
      registryFile(dir, filesRegistry('unknown', false)),
      '--ungated',
      '--trajectory',
      trajectory,
      '--task-queue',
      uniqueId('mcp-operator'),
    ];
    const a = await startGateway(args, { SETTLE_FAILPOINTS: 'mcp.after_call=kill' });
    await expect(a.call('edit_file', EDIT(file), 'edit-1')).rejects.toThrow();
    await a.exited;
    expect(fs.readFileSync(file, 'utf8')).toBe('count:I\n');

    const b = await startGateway(args);
    const answered = b.call('edit_file', EDIT(file), 'edit-1');
    const key = await until(async () => (await store.list({ state: 'IN_DOUBT', trajectoryId: trajectory }))[0]?.key, 'the call IN_DOUBT');
    const resolved = await runSettle(['resolve', key, '--as', 'applied', '--reason', 'counter.txt shows the edit'], {
      env: { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') },
    });
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);
    const result = await answered;
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(settleMeta(result)).toEqual({ key, resolution: 'settled_by_operator' });
    expect(fs.readFileSync(file, 'utf8')).toBe('count:I\n');
    expect(await store.get(key)).toMatchObject({ state: 'COMPLETED', generation: 1 });
    await b.close();
  }, 240_000);
});

describe('capabilities', () => {
  it('refuses a tool the capability does not grant, with a clear tool error, and runs one it grants', async () => {
    const dir = tempWorkspace('mcp-cap');
    const file = counterFile(dir);
    const trajectory = uniqueId('mcp-cap');
    const secret = crypto.randomBytes(32);
    const ring: KeyRing = { signingKid: 'k1', keys: new Map([['k1', secret]]) };
    const token = sign(
      {
        v: 1,
        aud: trajectory,
        rights: ['read', 'write'],
        objects: ['mcp:files/read_text_file', 'mcp:files/edit_file'],
        pred: { max_cost: 10, budget: 100 },
        exp: Date.now() + 3_600_000,
        parent: null,
        depth: 0,
      },
      ring,
    );
    const capFile = path.join(dir, 'cap.json');
    fs.writeFileSync(capFile, JSON.stringify(token));
    const gateway: GatewaySession = await startGateway(
      [
        '--upstream',
        nodeCommand(FILESYSTEM_SERVER, dir),
        '--registry',
        registryFile(dir, filesRegistry()),
        '--capability',
        capFile,
        '--task-queue',
        uniqueId('mcp-cap'),
      ],
      { SETTLE_CAP_KEYS: `k1:${secret.toString('base64')}` },
    );
    const refused = await gateway.call('write_file', { path: file, content: 'overwritten\n' }, 'write-1');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain("refused: the session's capability does not grant mcp:files/write_file");
    expect(fs.readFileSync(file, 'utf8')).toBe('count:\n');
    // Granted: settled, and the worker (which holds the keys) checks the capability again.
    const edited = await gateway.call('edit_file', EDIT(file), 'edit-1');
    expect(edited.isError, textOf(edited)).toBeFalsy();
    expect(fs.readFileSync(file, 'utf8')).toBe('count:I\n');
    const read = await gateway.call('read_text_file', { path: file });
    expect(read.isError, textOf(read)).toBeFalsy();
    expect(textOf(read)).toContain('count:I');
    await gateway.close();
  }, 180_000);
});

describe('a server that says its writing tool is read-only', () => {
  it('is settled anyway: the same call id appends once, and the call has an endpoint record', async () => {
    const dir = tempWorkspace('mcp-liar');
    const notes = path.join(dir, 'notes.txt');
    const gateway = await startGateway([
      '--upstream',
      nodeCommand(LYING_SERVER),
      '--name',
      'liar',
      '--ungated',
      '--task-queue',
      uniqueId('mcp-liar'),
    ]);
    // Listed as the server wrote it; settle lint's findings on it went to the gateway's log only.
    const listed = await gateway.client.listTools();
    const tool = listed.tools.find((t) => t.name === 'append_note');
    expect(tool?.annotations?.readOnlyHint).toBe(true);
    expect(tool?.description).toBe('Looks up a note (it says). It appends the text to the file.');
    expect(tool?.inputSchema.properties).toEqual({
      file: { type: 'string', description: 'absolute path' },
      text: { type: 'string', description: 'one line' },
    });
    expect(gateway.stderr()).toMatch(/settle mcp lint \(liar\): .*append_note/);
    const first = await gateway.call('append_note', { file: notes, text: 'hello' }, 'note-1');
    const again = await gateway.call('append_note', { file: notes, text: 'hello' }, 'note-1');
    expect(first.isError, textOf(first)).toBeFalsy();
    expect(fs.readFileSync(notes, 'utf8')).toBe('hello\n');
    expect(settleMeta(again).key).toBe(settleMeta(first).key);
    expect(settleMeta(first).resolution).toBe('executed');
    expect((await store.get(settleMeta(first).key))?.state).toBe('COMPLETED');
    await gateway.close();
  }, 180_000);
});

describe('--approval-timeout', () => {
  it('denies an A3 call nobody approved once the timeout passes; the upstream is never called', async () => {
    const dir = tempWorkspace('mcp-approval');
    const notes = path.join(dir, 'notes.txt');
    const gateway = await startGateway([
      '--upstream',
      nodeCommand(LYING_SERVER),
      '--registry',
      registryFile(dir, { server: 'liar', tools: { append_note: { level: 'A3' } } }),
      '--ungated',
      '--approval-timeout',
      '2s',
      '--task-queue',
      uniqueId('mcp-approval'),
    ]);
    const result = await gateway.call('append_note', { file: notes, text: 'never' }, 'note-1');
    expect(result.isError).toBe(true);
    expect(settleMeta(result).resolution).toBe('denied');
    expect(gateway.stderr()).toContain('append_note (A3) waits for an operator: settle approve');
    expect(fs.existsSync(notes)).toBe(false);
    await gateway.close();
  }, 180_000);
});

describe('the upstream dying in the middle of a call', () => {
  it('leaves the call IN_DOUBT (its effect done, its answer lost) until the operator settles it; it never runs again', async () => {
    const dir = tempWorkspace('mcp-upstream-dies');
    const notes = path.join(dir, 'notes.txt');
    const pidFile = path.join(dir, 'upstream.pid');
    const gateway = await startGateway([
      '--upstream',
      nodeCommand(LYING_SERVER),
      '--name',
      'liar',
      '--ungated',
      '--task-queue',
      uniqueId('mcp-dies'),
    ]);
    const args = { file: notes, text: 'once', pid_file: pidFile, ms: 60_000 };
    const answered = gateway.call('append_slowly', args, 'slow-1');
    const pid = await until(async () => fs.existsSync(pidFile) && Number(fs.readFileSync(pidFile, 'utf8')), 'the upstream appended');
    process.kill(pid, 'SIGKILL');
    const records = await until(async () => {
      const inDoubt = (await store.list({ state: 'IN_DOUBT' })).filter(
        (r) => r.tool === 'append_slowly' && (r.intent as { file?: string } | null)?.file === notes,
      );
      return inDoubt.length ? inDoubt : null;
    }, 'the call IN_DOUBT');
    expect(records).toHaveLength(1);
    const key = records[0]!.key;
    const resolved = await runSettle(['resolve', key, '--as', 'applied', '--reason', 'notes.txt has the line'], {
      env: { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') },
    });
    expect(resolved.stderr).toBe('');
    const result = await answered;
    expect(settleMeta(result)).toEqual({ key, resolution: 'settled_by_operator' });
    expect(fs.readFileSync(notes, 'utf8')).toBe('once\n');
    // The next call starts the upstream again.
    const next = await gateway.call('append_note', { file: notes, text: 'next' }, 'note-2');
    expect(next.isError, textOf(next)).toBeFalsy();
    expect(fs.readFileSync(notes, 'utf8')).toBe('once\nnext\n');
    await gateway.close();
  }, 240_000);
});
