/**
 * Workers on several hosts (docs/deploying.md#workers-on-several-hosts), proven with two "hosts"
 * on one machine: two worker processes on one task queue, each in its own mount namespace
 * (`unshare -m`) where a different directory is bound at the same workspace root path. Every
 * workspace exists on both hosts (a stale copy on the other), so a call run or probed on the
 * wrong host would leave its effect, or its "not applied", on the wrong disk.
 *
 * One host — its worker and everything it started — is SIGKILLed while its trajectories edit
 * (each edit sleeps before its rename, so the kill lands mid-effect), then comes back. Effects are
 * counted at the effect, in the files on each host's disk: each edit once, on one host, none lost.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { handOverWorkspace } from '../../activities/tools/sandbox-identity';
import { killHostProcesses, requireHosts } from '../../chaos/infra/host';
import { WorkerProcess } from '../../chaos/infra/worker-process';
import { openTestDb, testStore, uniqueId } from '../support/env';

const EDITS = 10;
const db = openTestDb(2);
const store = testStore(db);
const hosts: Host[] = [];
let connection: Connection;

interface Host {
  name: string;
  /** The directory this host's namespace binds at the shared workspace root path: its "disk". */
  disk: string;
  worker: WorkerProcess;
}

/** A worker in a mount namespace of its own, where `disk` is bound at `root` (chaos/infra/host.ts). */
function startHost(name: string, disk: string, root: string, taskQueue: string): Host {
  const worker = WorkerProcess.start({
    temporalAddress: inject('temporalAddress'),
    databaseUrl: inject('databaseUrl'),
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    // Each edit waits before its rename: a kill lands inside the effect's window.
    failpoints: 'file_edit.before_rename=sleep:300',
    env: { SETTLE_WORKSPACE_ROOT: root, SETTLE_HOST_ID: '' },
    host: { disk, at: root },
  });
  const host: Host = { name, disk, worker };
  hosts.push(host);
  return host;
}

/** SIGKILL to the host's whole process group and everything it started, at once. */
function killHost(host: Host): void {
  killHostProcesses([host.worker.pid]);
}

async function hostIdOf(host: Host): Promise<string> {
  await host.worker.ready(180_000);
  const id = host.worker.hostId;
  if (!id) throw new Error(`${host.name} logged no host id:\n${host.worker.output()}`);
  return id;
}

function edits(file: string): string[] {
  return fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('edit-'))
    : [];
}

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  for (const h of hosts) killHost(h);
  await connection?.close();
  await db.destroy();
});

describe('workers on several hosts', { timeout: 300_000 }, () => {
  it('a host SIGKILLed mid-edit: its calls wait for it, none runs or is probed on the other host; 0 duplicated, 0 lost', async () => {
    requireHosts();

    const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-hosts-')));
    const root = path.join(base, 'root');
    const disks = { a: path.join(base, 'disk-a'), b: path.join(base, 'disk-b') };
    for (const dir of [root, disks.a, disks.b]) fs.mkdirSync(dir, { mode: 0o700 });
    const taskQueue = uniqueId('hosts');
    const settle = new SettleClient(new Client({ connection }), taskQueue);

    // Six workspaces, each on both disks with the same content: the other copy is stale.
    const names = Array.from({ length: 6 }, (_, i) => `ws-${i}`);
    for (const disk of Object.values(disks))
      for (const name of names) {
        const ws = path.join(disk, name);
        fs.mkdirSync(ws);
        fs.writeFileSync(path.join(ws, 'app.txt'), 'END\n');
        handOverWorkspace(ws);
      }
    const trajectory = (name: string) => {
      const file = path.join(root, name, 'app.txt');
      return {
        workspace: path.join(root, name),
        backoff: { initialMs: 200, maxMs: 2_000 },
        // Each edit adds its line before END: a second execution of one would add it twice.
        turns: Array.from({ length: EDITS }, (_, k) => ({
          turn: k,
          calls: [{ call_id: `e${k}`, tool: 'file_edit', args: { path: file, old_str: 'END', new_str: `edit-${k}\nEND` } }],
        })),
      };
    };

    // Host A alone first: the first three trajectories find their workspace there.
    let hostA = startHost('host-a', disks.a, root, taskQueue);
    const idA = await hostIdOf(hostA);
    const ids = names.map((n) => uniqueId(`hosts-${n}`));
    for (const i of [0, 1, 2]) await settle.start(ids[i]!, trajectory(names[i]!));

    // Kill host A while its trajectories are mid-way.
    const onA = (i: number) => edits(path.join(disks.a, names[i]!, 'app.txt')).length;
    for (let t = 0; t < 1200 && ![0, 1, 2].every((i) => onA(i) >= 1); t++) await new Promise((r) => setTimeout(r, 50));
    killHost(hostA);
    await hostA.worker.exited;
    const atKill = [0, 1, 2].map(onA);
    expect(
      atKill.some((n) => n < EDITS),
      `host A's trajectories had finished before the kill: ${atKill.join(', ')}`,
    ).toBe(true);

    // Host B: it runs A's trajectories' workflow tasks now, and three trajectories of its own.
    const hostB = startHost('host-b', disks.b, root, taskQueue);
    const idB = await hostIdOf(hostB);
    expect(idA).not.toBe(idB); // derived, without SETTLE_HOST_ID: the same path, another directory
    for (const i of [3, 4, 5]) await settle.start(ids[i]!, trajectory(names[i]!));

    // While A is down, its trajectories make no progress anywhere: not on A's disk, not on B's stale
    // copy. Longer than an attempt waits on A's queue (30 s): its call then asks the shared queue
    // once (host B refuses it: only a settled result would replay) and waits again.
    await new Promise((r) => setTimeout(r, 36_000));
    expect([0, 1, 2].map(onA)).toEqual(atKill);
    for (const i of [0, 1, 2]) expect(edits(path.join(disks.b, names[i]!, 'app.txt'))).toEqual([]);
    // What a waiting trajectory says (its current details, as `settle status` shows them).
    const waiting = [0, 1, 2].find((i) => atKill[i]! < EDITS)!;
    const metadata = await settle.client.workflow
      .getHandle(ids[waiting]!)
      .query<{ currentDetails?: string | null }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails, String(metadata.currentDetails)).toMatch(
      new RegExp(`waits for host ${idA}, which holds its workspace: no worker took it from queue`),
    );

    // Host A comes back (same disk, so the same derived host id); everything finishes.
    hostA = startHost('host-a-again', disks.a, root, taskQueue);
    expect(await hostIdOf(hostA)).toBe(idA);
    const results = await Promise.all(ids.map((id) => settle.result(id)));

    const expected = Array.from({ length: EDITS }, (_, k) => `edit-${k}`);
    for (const [i, name] of names.entries()) {
      const result = results[i]!;
      expect(
        result.calls.map((c) => c.state),
        `${ids[i]}: ${JSON.stringify(result.calls)}`,
      ).toEqual(Array(EDITS).fill('COMPLETED'));
      for (const c of result.calls) expect(c.observation?.error ?? null, JSON.stringify(c.observation)).toBeNull();
      const onDiskA = edits(path.join(disks.a, name, 'app.txt'));
      const onDiskB = edits(path.join(disks.b, name, 'app.txt'));
      // Every edit exactly once, in order, all on one host's disk; the other copy untouched.
      const [home, other, homeId] = onDiskA.length > 0 ? [onDiskA, onDiskB, idA] : [onDiskB, onDiskA, idB];
      expect(home, `${name}: edits on its host's disk`).toEqual(expected);
      expect(other, `${name}: edits on the other host's stale copy`).toEqual([]);
      expect(homeId).toBe(i < 3 ? idA : idB);
      // Every claim, and so every probe's evidence, on that host.
      const records = await store.list({ trajectoryId: ids[i]! });
      expect(records.map((r) => r.host)).toEqual(Array(EDITS).fill(homeId));
    }
    for (const h of [hostA, hostB]) killHost(h);
  });
});
