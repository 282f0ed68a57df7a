/**
 * Issue 12, the low items: what the CLI prints and writes, and the child id namespace.
 * Real worker, real Temporal, real Postgres, the `settle` command as a separate process.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { SettleClient } from '../../client/index';
import { sign } from '../../activities/capability/signer';
import { writeDevSettings } from '../../cli/dev-settings';
import { CONSOLE_URL_FILE } from '../../cli/console/url-file';
import { startTemporal } from '../../stack/temporal';
import type { TrajectoryResult } from '../../workflows/definitions';
import { runSettle, SETTLE_BIN } from '../support/cli';
import { startTestWorker, tempWorkspace, testKeyRing, uniqueId, type RunningWorker } from '../support/env';

const ring = testKeyRing();
let worker: RunningWorker;
let settle: SettleClient;
beforeAll(async () => {
  worker = await startTestWorker({ keyRing: ring, policy: { allowNoCapability: true } });
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(() => worker?.stop());

/** Asynchronously: the worker answering a status query runs in this process. */
async function cli(args: string[]) {
  const env = {
    ...process.env,
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: worker.taskQueue,
  };
  return promisify(execFile)(process.execPath, [SETTLE_BIN, ...args], { env });
}

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/; // anything but the newlines between lines

describe('item 13: terminal control characters from a model-chosen call id', () => {
  it('settle records, status and show print them escaped, never raw', async () => {
    const ws = tempWorkspace('escape');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'v=1\n');
    const hostile = '\u001b[2J\u001b]0;owned\u0007\u009b31m\u202eid';
    const id = uniqueId('escape');
    await settle.start(id, {
      workspace: ws,
      turns: [
        {
          turn: 0,
          calls: [{ call_id: hostile, tool: 'file_edit', args: { path: path.join(ws, 'a.txt'), old_str: 'v=1', new_str: 'v=2' } }],
        },
      ],
    });
    const result: TrajectoryResult = await settle.result(id);
    expect(result.calls[0]).toMatchObject({ callId: hostile, resolution: 'executed' });

    const records = await cli(['records', '--trajectory', id]);
    const status = await cli(['status', id]);
    const show = await cli(['show', result.calls[0]!.key!]);
    for (const out of [records.stdout, status.stdout, show.stdout]) {
      expect(out).not.toMatch(RAW_CONTROL);
      expect(out).not.toContain('\u202e');
    }
    expect(records.stdout).toContain('\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202eid');
    expect(status.stdout).toContain('\\x1b[2J\\x1b]0;o'); // the call column keeps its first 20 characters
    // --json stays exact JSON (escaped by JSON itself), for programs.
    expect(JSON.parse((await cli(['records', '--trajectory', id, '--json'])).stdout)[0].callId).toBe(hostile);
  });
});

describe('settle dev, its database password and its console URL', () => {
  it('prints DATABASE_URL without its password and no console URL (both only in owner-only files)', async () => {
    const databaseUrl = inject('databaseUrl');
    const password = decodeURIComponent(new URL(databaseUrl).password);
    expect(password.length).toBeGreaterThan(0);
    const child = spawn(process.execPath, [SETTLE_BIN, 'dev'], { env: { ...process.env, DATABASE_URL: databaseUrl } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const exited = new Promise((resolve) => child.once('close', resolve));
    try {
      const deadline = Date.now() + 120_000;
      while (!/metrics /.test(stdout) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(stdout).toMatch(/settle dev is up/);
      const line = stdout.split('\n').find((l) => l.includes('DATABASE_URL'))!;
      expect(line).toContain(`${new URL(databaseUrl).username}:***@`);
      expect(stdout + stderr).not.toContain(password);
      // The console's URL (its access token, the secret name its cookie is bound to): in an owner-only file, not the output.
      const consoleUrl = new URL(fs.readFileSync(CONSOLE_URL_FILE, 'utf8').trim());
      expect(fs.statSync(CONSOLE_URL_FILE).mode & 0o777).toBe(0o600);
      expect(consoleUrl.hostname).toMatch(/^[0-9a-f]{32}\.settle\.localhost$/);
      const token = consoleUrl.searchParams.get('token')!;
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(stdout).toContain(`console              open the URL in ${CONSOLE_URL_FILE}`);
      for (const secret of [token, consoleUrl.hostname]) expect(stdout + stderr).not.toContain(secret);
    } finally {
      child.kill('SIGINT');
      await exited;
    }
  });
});

describe('item 14: files holding secrets are owner-only', () => {
  it('the dev settings file (database URL with password) is written 0600, also over an older world-readable one', () => {
    const file = path.join(tempWorkspace('devjson'), 'dev.json');
    fs.writeFileSync(file, '{}', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    writeDevSettings(
      { temporalAddress: 'a', namespace: 'n', taskQueue: 't', databaseUrl: 'postgres://u:secret@h/db', uiUrl: null, pid: 1 },
      file,
    );
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).databaseUrl).toBe('postgres://u:secret@h/db');
  });

  it("the dev server's history file is 0600, also when an older run left it world-readable", async () => {
    const dir = tempWorkspace('temporal-db');
    const dbFile = path.join(dir, 'temporal.db');
    const run = async () => {
      const temporal = await startTemporal({ dbFile });
      try {
        const client = await SettleClient.connect({ address: temporal.address, namespace: 'default' });
        await client.close();
      } finally {
        await temporal.stop();
      }
      const files = fs.readdirSync(dir).filter((f) => f.startsWith('temporal.db'));
      expect(files).toContain('temporal.db');
      for (const f of files) expect([f, fs.statSync(path.join(dir, f)).mode & 0o777]).toEqual([f, 0o600]);
    };
    await run();
    fs.chmodSync(dbFile, 0o644);
    await run();
  });
});

describe('item 17: an absurd --limit', () => {
  it('exits 2 naming the argument, before any database call', async () => {
    const r = await runSettle(['records', '--limit', '99999999999999999999'], { env: { DATABASE_URL: inject('databaseUrl') } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--limit must be an integer from 1 to 1000000/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('item 18: the child id namespace is reserved', () => {
  it('the client and a spec refuse a root trajectory id containing /sub-', async () => {
    await expect(settle.start('x/sub-1', { workspace: tempWorkspace('reserved') })).rejects.toThrow(
      'trajectoryId must not contain "/sub-" (reserved for sub-agents, <parent>/sub-<n>)',
    );
    const spec = path.join(tempWorkspace('reserved'), 'spec.json');
    fs.writeFileSync(spec, JSON.stringify({ trajectoryId: 'x/sub-1', workspace: path.dirname(spec) }));
    const r = await runSettle(['start', spec], { env: { TEMPORAL_ADDRESS: '127.0.0.1:1' } });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('settle: spec.trajectoryId must not contain "/sub-" (reserved for sub-agents, <parent>/sub-<n>)');
  });

  it("a squatter started as x/sub-1 with the raw client ends at once, and x's sub-agent runs under its id", async () => {
    const ws = tempWorkspace('reserved');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'v=1\n');
    const parent = uniqueId('parent');
    const squatter = await worker.client.workflow.start('trajectoryWorkflow', {
      taskQueue: worker.taskQueue,
      workflowId: `${parent}/sub-1`,
      args: [{ workspace: ws, parentTrajectoryId: parent }], // claiming a parent it does not have
    });
    const failure = await squatter.result().then(
      () => null,
      (err: Error) => err,
    );
    expect(String((failure?.cause as Error | undefined)?.message)).toContain(
      `trajectory id ${parent}/sub-1 is reserved for a sub-agent of ${parent}`,
    );

    const capability = sign(
      {
        v: 1,
        aud: parent,
        rights: ['read'],
        objects: [`path:${ws}`],
        pred: { max_cost: 1, budget: 10 },
        exp: Date.now() + 3_600_000,
        parent: null,
        depth: 0,
      },
      ring,
    );
    const view = { call_id: 'v', tool: 'file_view', args: { path: path.join(ws, 'a.txt'), offset: 1, limit: 5 } };
    const spawn = {
      call_id: 'spawn',
      tool: 'spawn_subagent',
      args: {
        task: 'read',
        rights: ['read'],
        objects: [`path:${ws}`],
        max_cost: 1,
        budget: 3,
        expires_in_ms: 60_000,
        turns: [{ turn: 0, calls: [view] }],
      },
    };
    await settle.start(parent, { workspace: ws, capability, turns: [{ turn: 0, calls: [spawn] }] });
    const result = await settle.result(parent);
    expect(result.calls[0]).toMatchObject({ resolution: 'executed' });
    expect(JSON.parse(result.calls[0]!.observation!.output)).toMatchObject({
      subagent: `${parent}/sub-1`,
      outcome: 'completed',
      calls: [{ tool: 'file_view', resolution: 'read' }],
    });
  });
});
