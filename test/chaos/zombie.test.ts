/**
 * Zombie executors, in every phase of an execution: a real worker process pauses itself (SIGSTOP
 * at a failpoint) past its lease, another worker takes the call over, then the paused one
 * resumes (SIGCONT) where it stopped. The effect must happen exactly once, whatever the phase,
 * and no operator may be needed: the paused executor is fenced (claim, generation, a withdrawn
 * temporary file, a run fenced by the probe) or records what it did itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { WorkerProcess } from '../../chaos/infra/worker-process';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
const workers: WorkerProcess[] = [];

afterAll(async () => {
  for (const w of workers) {
    w.signal('SIGCONT');
    w.signal('SIGKILL');
  }
  await db.destroy();
});

function startWorker(taskQueue: string, failpoints = ''): WorkerProcess {
  const worker = WorkerProcess.start({
    temporalAddress: inject('temporalAddress'),
    databaseUrl: inject('databaseUrl'),
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    failpoints,
  });
  workers.push(worker);
  return worker;
}

type Tool = 'file_edit' | 'bash_execute';

interface Phase {
  failpoint: string;
  tool: Tool;
  /** The paused executor still holds facts only it can record: resume it before the call can settle. */
  resumeBeforeSettled?: boolean;
}

/** Runs one call whose executor pauses at `failpoint`; returns the file the effect lands in and the outcome. */
async function zombieScenario({ failpoint, tool, resumeBeforeSettled }: Phase) {
  const t0 = Date.now();
  const step = (what: string) => console.error(`[zombie ${failpoint}] +${((Date.now() - t0) / 1000).toFixed(1)} s ${what}`);
  const workspace = tempWorkspace('zombie');
  const file = path.join(workspace, 'config.txt');
  fs.writeFileSync(file, 'replicas=1\n');
  const taskQueue = uniqueId('zombie');
  const trajectoryId = uniqueId('zombie');
  const call =
    tool === 'file_edit'
      ? { call_id: 'c', tool, args: { path: file, old_str: 'replicas=1', new_str: 'replicas=2' } }
      : { call_id: 'c', tool, args: { command: 'echo deployed >> deploy.log' } };

  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  try {
    const zombie = startWorker(taskQueue, `${failpoint}=stop`);
    const handle = await client.workflow.start('trajectoryWorkflow', {
      taskQueue,
      workflowId: trajectoryId,
      args: [{ workspace, leaseMs: 2_000, turns: [{ turn: 0, calls: [call] }] }],
    });
    await waitFor(async () => zombie.stopped && zombie.output().includes(`settle failpoint: ${failpoint} → stop`));
    step('zombie stopped');

    const rescuer = startWorker(taskQueue);
    await rescuer.ready();
    step('rescuer ready');
    if (resumeBeforeSettled) {
      // Nobody but the paused executor knows how its command ended: the trajectory waits (for an
      // operator, or for the executor), and is settled by the executor's late completion.
      await waitFor(async () => (await handle.describe()).typedSearchAttributes.get(SA_TRAJECTORY_STATUS) === 'waiting_operator');
      step('waiting for an operator');
      zombie.signal('SIGCONT');
    }
    const result: TrajectoryResult = await handle.result();
    step('trajectory done');
    // The zombie resumes where it stopped and finishes its activity (fenced, or recording what it
    // did); a graceful shutdown waits for it.
    zombie.signal('SIGCONT');
    zombie.signal('SIGTERM');
    // A task it had already polled may run into the failpoint again while it drains: resume it each time.
    const resume = setInterval(() => zombie.stopped && zombie.signal('SIGCONT'), 200);
    expect(await zombie.exited.finally(() => clearInterval(resume))).toEqual({ code: 0, signal: null });
    step('zombie exited');
    rescuer.signal('SIGTERM');
    await rescuer.exited;
    step('rescuer exited');

    const key = (await store.list({ trajectoryId }))[0]!.key;
    return { result, file, workspace, record: await store.get(key), events: await store.events(key) };
  } finally {
    await connection.close();
  }
}

const effectOf = (tool: Tool, file: string, workspace: string) =>
  tool === 'file_edit' ? fs.readFileSync(file, 'utf8') : fs.readFileSync(path.join(workspace, 'deploy.log'), 'utf8');
const once = (tool: Tool) => (tool === 'file_edit' ? 'replicas=2\n' : 'deployed\n');

describe('zombie executor (SIGSTOP past its lease, then SIGCONT), in every phase', () => {
  const phases: (Phase & { phase: string })[] = [
    { phase: 'before the claim that records the intent', failpoint: 'settled.before_intent', tool: 'bash_execute' },
    { phase: 'claimed with its intent, before executing', failpoint: 'settled.after_claim', tool: 'bash_execute' },
    { phase: 'between the lease check and the start row', failpoint: 'bash_execute.after_lease_check', tool: 'bash_execute' },
    { phase: 'between the lease check and the rename', failpoint: 'file_edit.after_lease_check', tool: 'file_edit' },
    { phase: 'during the edit (prepared, not renamed)', failpoint: 'file_edit.before_rename', tool: 'file_edit' },
    { phase: 'during the command', failpoint: 'bash_execute.after_start', tool: 'bash_execute', resumeBeforeSettled: true },
  ];

  for (const p of phases) {
    it(`${p.phase} (${p.failpoint}): the effect happens exactly once, no operator`, { timeout: 300_000 }, async () => {
      const { result, file, workspace, record, events } = await zombieScenario(p);
      expect(effectOf(p.tool, file, workspace)).toBe(once(p.tool));
      expect(result.calls[0]).toMatchObject({ tool: p.tool, state: 'COMPLETED' });
      expect(result.calls[0]!.resolution).not.toBe('settled_by_operator');
      expect(record).toMatchObject({ state: 'COMPLETED' });
      expect(record!.settledBy ?? '').not.toMatch(/^operator:/);
      expect(events.some((e) => e.actor.startsWith('operator:'))).toBe(false);
    });
  }
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
