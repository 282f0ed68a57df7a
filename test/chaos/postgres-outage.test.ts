/**
 * PostgreSQL restarts under real worker processes: fast shutdown (sessions terminated with
 * 57P01), crash (kill -9 of the postmaster and its backends, WAL recovery on start), and outages
 * of several seconds. Workers, turns and trajectories must survive all of them, and nothing that
 * happened may be forgotten. Each test file owns its PostgreSQL (the shared one is never stopped).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, inject } from 'vitest';
import { sql } from 'kysely';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { openDatabase } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { SettleClient } from '../../client/index';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { PostgresServer } from '../../chaos/infra/postgres-server';
import { WorkerProcess } from '../../chaos/infra/worker-process';
import { tempWorkspace, uniqueId } from '../support/env';

let server: PostgresServer;
const workers: WorkerProcess[] = [];
let connection: Connection;
let client: Client;

beforeAll(async () => {
  server = await PostgresServer.create(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-pg-outage-')));
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
}, 120_000);

// A test that failed mid-outage must not leave the next one without its database.
beforeEach(() => server.start());

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await connection?.close();
  await server?.start().catch(() => {});
  await server?.destroy();
});

function startWorker(taskQueue: string, failpoints = ''): WorkerProcess {
  const w = WorkerProcess.start({
    temporalAddress: inject('temporalAddress'),
    databaseUrl: server.url,
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    failpoints,
  });
  workers.push(w);
  return w;
}

/** A store on the test's own PostgreSQL, opened only while it is up. */
async function withStore<T>(fn: (store: EndpointStore) => Promise<T>): Promise<T> {
  const db = openDatabase(server.url, { max: 1 });
  try {
    return await fn(new EndpointStore(db));
  } finally {
    await db.destroy();
  }
}

/** Locks the endpoint records in a transaction of its own; returns the unlock (which tolerates a dead server). */
async function lockRecords(): Promise<() => Promise<void>> {
  const locker = new pg.Client({ connectionString: server.url });
  locker.on('error', () => {});
  await locker.connect();
  await locker.query('begin');
  await locker.query('lock table settle_endpoint_records in access exclusive mode');
  return () => locker.end().catch(() => {});
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function editTurn(file: string, marker: string) {
  return { call_id: `edit-${marker}`, tool: 'file_edit', args: { path: file, old_str: 'END', new_str: `${marker}\nEND` } };
}

async function runScripted(taskQueue: string, workspace: string, calls: { call_id: string; tool: string; args: object }[]) {
  const handle = await client.workflow.start('trajectoryWorkflow', {
    taskQueue,
    workflowId: uniqueId('pg'),
    args: [{ workspace, leaseMs: 2_000, turns: [{ turn: 0, calls }] }],
  });
  return { handle, result: () => handle.result() as Promise<TrajectoryResult> };
}

describe('PostgreSQL restarts', { timeout: 240_000 }, () => {
  it('a worker survives a fast shutdown and a crash of PostgreSQL, and one started while it is down waits for it', async () => {
    const taskQueue = uniqueId('pg');
    const workspace = tempWorkspace('pg');
    const file = path.join(workspace, 'notes.txt');
    fs.writeFileSync(file, 'END\n');
    const first = startWorker(taskQueue);
    await first.ready();
    for (const [marker, fault] of [
      ['a', () => server.stop()], // fast shutdown: every session gets 57P01 and is closed
      ['b', () => server.crash()], // kill -9 of the postmaster and its backends: connections reset
    ] as const) {
      // Hold the worker's next statement in flight (a lock on the records), then take PostgreSQL away under it.
      const unlock = await lockRecords();
      const trajectory = await runScripted(taskQueue, workspace, [editTurn(file, marker)]);
      await sleep(1_500);
      await fault();
      await unlock();
      await sleep(1_000);
      expect(first.alive, first.output()).toBe(true);
      await server.start(); // after a crash: WAL recovery
      expect((await trajectory.result()).calls[0]).toMatchObject({ state: 'COMPLETED' });
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('a\nb\nEND\n');

    // A worker started while PostgreSQL is down waits for it, saying so, and then works.
    first.signal('SIGTERM');
    await first.exited;
    await server.stop();
    const second = startWorker(taskQueue);
    while (!/waiting for the database/.test(second.output()) && second.alive) await sleep(100);
    await sleep(2_000);
    expect(second.alive, second.output()).toBe(true);
    expect(second.output()).toMatch(/settle worker: waiting for the database: .* is unreachable \(connect ECONNREFUSED .*\); retrying in/);
    await server.start();
    await second.ready();
    expect((await (await runScripted(taskQueue, workspace, [editTurn(file, 'c')])).result()).calls[0]).toMatchObject({
      resolution: 'executed',
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('a\nb\nc\nEND\n');
  });

  it('an outage fails no turn and no trajectory, and loses no count of proposed calls', async () => {
    const taskQueue = uniqueId('pg');
    const workspace = tempWorkspace('pg');
    const file = path.join(workspace, 'notes.txt');
    fs.writeFileSync(file, 'END\n');
    const worker = startWorker(taskQueue);
    await worker.ready();
    const settle = new SettleClient(client, taskQueue);
    const orchestrated = uniqueId('pg-orch');
    await settle.start(orchestrated, { workspace, leaseMs: 2_000 });
    await settle.runTurn(orchestrated, 0, [{ call_id: 'look', tool: 'file_view', args: { path: file, offset: 1, limit: 10 } }]);

    await server.stop();
    // While PostgreSQL is down: a turn with a valid edit, a malformed call and a read; and a scripted trajectory.
    const turn = settle.runTurn(orchestrated, 1, [
      editTurn(file, 'during-outage'),
      { call_id: 'bad', tool: 'file_edit', args: { path: file } },
      { call_id: 'read', tool: 'file_view', args: { path: file, offset: 1, limit: 10 } },
    ]);
    const scriptedWorkspace = tempWorkspace('pg');
    const scriptedFile = path.join(scriptedWorkspace, 'notes.txt');
    fs.writeFileSync(scriptedFile, 'END\n');
    const scripted = await runScripted(taskQueue, scriptedWorkspace, [editTurn(scriptedFile, 'scripted')]);
    await sleep(8_000);
    await server.start();

    const { calls } = await turn;
    expect(calls.map((c) => [c.callId, c.resolution])).toEqual([
      ['edit-during-outage', 'executed'],
      ['bad', 'invalid'],
      ['read', 'read'],
    ]);
    expect((await scripted.result()).calls[0]).toMatchObject({ resolution: 'executed' });
    await settle.finish(orchestrated, 'completed', 'done');
    expect(await settle.result(orchestrated)).toMatchObject({ outcome: 'completed' });
    expect(fs.readFileSync(file, 'utf8')).toBe('during-outage\nEND\n');
    expect(fs.readFileSync(scriptedFile, 'utf8')).toBe('scripted\nEND\n');
    // Every proposal counted exactly once, the malformed one as malformed.
    const counted = await withStore(async (store) =>
      sql<{ calls: number; malformed: number }>`
        select count(*)::int as calls, (count(*) filter (where not valid))::int as malformed
        from settle_tool_calls where trajectory_id = ${orchestrated}`.execute(store.db),
    );
    expect(counted.rows[0]).toEqual({ calls: 4, malformed: 1 });
    expect(worker.alive, worker.output()).toBe(true);
  });

  it('a command that finished during an outage is completed when PostgreSQL returns, without an operator', async () => {
    const taskQueue = uniqueId('pg');
    const workspace = tempWorkspace('pg');
    const log = path.join(workspace, 'deploy.log');
    // The command runs, then the worker holds its result 3 s before recording it: PostgreSQL is down by then.
    const worker = startWorker(taskQueue, 'bash_execute.after_run=sleep:3000');
    await worker.ready();
    const { handle, result } = await runScripted(taskQueue, workspace, [
      { call_id: 'deploy', tool: 'bash_execute', args: { command: 'echo ran >> deploy.log' } },
    ]);
    while (!fs.existsSync(log)) await sleep(20);
    await server.stop();
    const watchOperator = (async () => {
      let seen = false;
      for (let i = 0; i < 80 && !seen; i++) {
        const d = await handle.describe();
        seen = d.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) === 'waiting_operator';
        if (d.status.name !== 'RUNNING') break;
        await sleep(250);
      }
      return seen;
    })();
    await sleep(8_000); // far past the 2 s lease
    await server.start();

    const done = await result();
    const events = await withStore((store) => store.events(done.calls[0]!.key!));
    const trail = JSON.stringify(events, null, 1);
    // Normally 'executed'; on a loaded machine Temporal may hand the call to another attempt,
    // which finds it IN_DOUBT until the executor's late completion settles it (settled_by_probe),
    // or already COMPLETED by it (replayed): either way the executor's own result is what is
    // recorded, the command ran once, and nobody else decided.
    expect(done.calls[0]!.state, trail).toBe('COMPLETED');
    expect(done.calls[0]!.resolution, trail).toMatch(/^(executed|settled_by_probe|replayed)$/);
    expect(events.at(-1)!.toState, trail).toBe('COMPLETED');
    expect(events.at(-1)!.actor, trail).toMatch(/^worker:.*@1$/);
    expect(await watchOperator).toBe(false);
    expect(fs.readFileSync(log, 'utf8')).toBe('ran\n');
    const record = await withStore((store) => store.get(done.calls[0]!.key!));
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 1, result: { exit_status: 0 } });
    expect(worker.alive, worker.output()).toBe(true);
  });
});
