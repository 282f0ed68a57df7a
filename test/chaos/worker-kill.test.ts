/**
 * Crash recovery, proven by killing real worker processes (SIGKILL) in the middle of an effect.
 *
 * Worker A runs with a failpoint that kills it at an exact point of `file_edit`; worker B (no
 * failpoint) takes over the retried activity. The call must be settled by the probe from the
 * file's real state — re-executed exactly once if the effect had not happened, never if it had.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { settleCallUpdate } from '../../workflows/trajectory';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';
import { signed, TEST_OPERATOR } from '../support/operator';
import { SA_IN_DOUBT_COUNT, SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { killWorkerProcesses, startWorkerProcess as spawnWorker, type WorkerProcess } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('../../workers/worker.ts', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/settle.js', import.meta.url));
const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  killWorkerProcesses();
  await db.destroy();
});

function startWorkerProcess(taskQueue: string, failpoints = ''): WorkerProcess {
  return spawnWorker(WORKER, {
    TEMPORAL_TASK_QUEUE: taskQueue,
    SETTLE_WORKSPACE_ROOT: testWorkspaceRoot(),
    SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    SETTLE_FAILPOINTS: failpoints,
  });
}

interface Scenario {
  /** Without a failpoint: runs while worker A works; worker A is SIGKILLed when it returns. */
  beforeKill?: (file: string, trajectoryId: string) => Promise<void>;
  /** Runs after worker A died, before worker B starts. */
  afterCrash?: (file: string) => void;
  /** Runs while worker B works on the trajectory. */
  whileRunning?: (handle: WorkflowHandle, key: string) => Promise<void>;
}

async function crashScenario(
  failpoint:
    | 'file_edit.before_rename'
    | 'file_edit.after_rename'
    | 'bash_execute.after_lease_check'
    | 'bash_execute.after_start'
    | 'bash_execute.after_run'
    | null,
  scenario: Scenario & { call?: (file: string) => { call_id: string; tool: string; args: Record<string, unknown> } } = {},
) {
  const workspace = tempWorkspace('chaos');
  const file = path.join(workspace, 'config.txt');
  fs.writeFileSync(file, 'replicas=1\n');
  const taskQueue = uniqueId('chaos');
  const trajectoryId = uniqueId('chaos');

  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  try {
    const workerA = startWorkerProcess(taskQueue, failpoint ? `${failpoint}=kill` : '');
    const handle = await client.workflow.start('trajectoryWorkflow', {
      taskQueue,
      workflowId: trajectoryId,
      args: [
        {
          workspace,
          leaseMs: 2_000,
          turns: [
            {
              turn: 0,
              calls: [
                scenario.call?.(file) ?? {
                  call_id: 'scale',
                  tool: 'file_edit',
                  args: { path: file, old_str: 'replicas=1', new_str: 'replicas=2' },
                },
              ],
            },
          ],
        },
      ],
    });
    // Worker A kills itself (SIGKILL) at the failpoint, or is killed once `beforeKill` returns.
    if (scenario.beforeKill) {
      await scenario.beforeKill(file, trajectoryId);
      workerA.child.kill('SIGKILL');
    }
    expect(await workerA.exited).toBe('SIGKILL');
    scenario.afterCrash?.(file);

    const workerB = startWorkerProcess(taskQueue);
    const key = (await store.list({ trajectoryId }))[0]!.key;
    await scenario.whileRunning?.(handle, key);
    const result: TrajectoryResult = await handle.result();
    workerB.child.kill('SIGTERM');
    expect(await workerB.exited).toBe(0); // graceful shutdown on SIGTERM

    expect(result.calls[0]!.key).toBe(key);
    return { result, file, events: await store.events(key), record: await store.get(key) };
  } finally {
    await connection.close();
  }
}

describe('worker killed mid-effect', () => {
  it('killed before the rename: the probe finds the old file, settles NOT_EXECUTED, and the edit runs once', async () => {
    const { result, file, events, record } = await crashScenario('file_edit.before_rename');
    expect(fs.readFileSync(file, 'utf8')).toBe('replicas=2\n');
    expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'executed' });
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 2 });
    expect(events.map((e) => [e.generation, e.fromState, e.toState, e.actor.split(':')[0]])).toEqual([
      [1, 'UNSEEN', 'IN_FLIGHT', 'worker'],
      [1, 'IN_FLIGHT', 'IN_FLIGHT', 'worker'], // intent
      [1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'],
      [1, 'IN_DOUBT', 'NOT_EXECUTED', 'probe'],
      [2, 'NOT_EXECUTED', 'IN_FLIGHT', 'worker'],
      [2, 'IN_FLIGHT', 'IN_FLIGHT', 'worker'], // intent
      [2, 'IN_FLIGHT', 'COMPLETED', 'worker'],
    ]);
  });

  it('killed after the rename: the probe finds the new file, settles COMPLETED, and nothing runs again', async () => {
    const { result, file, events, record } = await crashScenario('file_edit.after_rename');
    expect(fs.readFileSync(file, 'utf8')).toBe('replicas=2\n');
    expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'settled_by_probe' });
    expect(result.calls[0]!.observation).toMatchObject({ output: `replaced 1 block in ${file}`, error: null });
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 1, settledBy: 'probe:file_edit' });
    expect(events.map((e) => [e.generation, e.fromState, e.toState, e.actor.split(':')[0]])).toEqual([
      [1, 'UNSEEN', 'IN_FLIGHT', 'worker'],
      [1, 'IN_FLIGHT', 'IN_FLIGHT', 'worker'],
      [1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'],
      [1, 'IN_DOUBT', 'COMPLETED', 'probe'],
    ]);
  });

  it('killed after the rename and the file changed since: the probe cannot tell, an operator settles it', async () => {
    const { result, file, events, record } = await crashScenario('file_edit.after_rename', {
      afterCrash: (f) => fs.writeFileSync(f, 'replicas=7\n'), // someone else edited it meanwhile
      whileRunning: async (handle, key) => {
        // The trajectory shows what it waits for, in search attributes and current details.
        await waitFor(async () => {
          const d = await handle.describe();
          return d.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) === 'waiting_operator';
        });
        const described = await handle.describe();
        expect(described.typedSearchAttributes.get(SA_IN_DOUBT_COUNT)).toBe(1);
        // A bad update is refused by the validator, naming the field.
        await expect(
          handle.executeUpdate(settleCallUpdate, { args: [{ key, verdict: 'applied', operator: '', reason: 'x' }] }),
        ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/operator must be a non-empty name/) } });
        // The operator's verdict, with the credential their key signs (settle resolve mints the same).
        const reason = 'deploy log shows replicas=2 was applied before the manual change';
        const claim = { key, verdict: 'applied', reason, generation: 1 } as const;
        const credential = signed({ purpose: 'settle', namespace: 'default', trajectoryId: handle.workflowId, ...claim });
        const settled = await handle.executeUpdate(settleCallUpdate, { args: [{ ...claim, operator: TEST_OPERATOR, credential }] });
        expect(settled).toEqual({ state: 'COMPLETED' });
      },
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('replicas=7\n'); // nothing re-executed
    expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'settled_by_operator' });
    expect(record).toMatchObject({
      state: 'COMPLETED',
      generation: 1,
      settledBy: `operator:${TEST_OPERATOR}`,
      settleReason: 'deploy log shows replicas=2 was applied before the manual change',
    });
    expect(events.at(-1)).toMatchObject({ fromState: 'IN_DOUBT', toState: 'COMPLETED', actor: `operator:${TEST_OPERATOR}` });
  });
});

// Two real worker processes start per test: on a loaded 2-core machine that alone takes half a minute.
describe('shell command killed mid-call (run markers, docs/design.md#shell-run-markers)', { timeout: 150_000 }, () => {
  const deploy = (f: string) => ({
    call_id: 'deploy',
    tool: 'bash_execute',
    args: { command: `echo deployed >> ${path.basename(f)}.log; echo out` },
  });
  const trail = (events: { generation: number; fromState: string; toState: string; actor: string }[]) =>
    events.map((e) => [e.generation, e.fromState, e.toState, e.actor.split(':')[0]]);

  it('killed before the exec: the probe finds no start row, settles NOT_EXECUTED, and the command runs once', async () => {
    const { result, file, events, record } = await crashScenario('bash_execute.after_lease_check', { call: deploy });
    expect(fs.readFileSync(`${file}.log`, 'utf8')).toBe('deployed\n');
    expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'executed', observation: { output: 'out\n', exit_status: 0 } });
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 2 });
    expect(trail(events)).toEqual([
      [1, 'UNSEEN', 'IN_FLIGHT', 'worker'],
      [1, 'IN_FLIGHT', 'IN_FLIGHT', 'worker'], // intent
      [1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'],
      [1, 'IN_DOUBT', 'NOT_EXECUTED', 'probe'],
      [2, 'NOT_EXECUTED', 'IN_FLIGHT', 'worker'],
      [2, 'IN_FLIGHT', 'IN_FLIGHT', 'worker'],
      [2, 'IN_FLIGHT', 'COMPLETED', 'worker'],
    ]);
    expect(events[3]!.detail).toMatchObject({ op: 'settle', reason: expect.stringMatching(/no start row in the database/) });
  });

  it('killed after the command exited, before completing: the probe settles COMPLETED with the recorded output, nothing runs again', async () => {
    const { result, file, events, record } = await crashScenario('bash_execute.after_run', { call: deploy });
    expect(fs.readFileSync(`${file}.log`, 'utf8')).toBe('deployed\n');
    expect(result.calls[0]).toMatchObject({
      tool: 'bash_execute',
      state: 'COMPLETED',
      resolution: 'settled_by_probe',
      observation: { output: 'out\n', error: null, exit_status: 0, truncated: false },
    });
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 1, settledBy: 'probe:bash_execute' });
    expect(trail(events)).toEqual([
      [1, 'UNSEEN', 'IN_FLIGHT', 'worker'],
      [1, 'IN_FLIGHT', 'IN_FLIGHT', 'worker'],
      [1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'],
      [1, 'IN_DOUBT', 'COMPLETED', 'probe'],
    ]);
  });

  it(
    'killed mid-command: the command dies with its worker, the probe cannot tell what it did, an operator settles it with `settle resolve`',
    { timeout: 150_000 },
    async () => {
      const { result, file, events, record } = await crashScenario('bash_execute.after_start', {
        call: (f) => ({
          call_id: 'deploy',
          tool: 'bash_execute',
          args: { command: `echo begun >> ${path.basename(f)}.log; sleep 20; echo finished >> ${path.basename(f)}.log` },
        }),
        whileRunning: async (handle, key) => {
          await waitFor(async () => (await handle.describe()).typedSearchAttributes.get(SA_TRAJECTORY_STATUS) === 'waiting_operator');
          // The probe said why it could not decide: started, no exit, and no longer running.
          const probed = (await store.events(key)).length;
          expect(probed).toBe(3);
          const described = await handle.describe();
          expect(described.typedSearchAttributes.get(SA_IN_DOUBT_COUNT)).toBe(1);
          const details = await currentDetails(handle);
          expect(details).toMatch(/started and no exit was recorded: it is not running \(.*\), and its effects may be partial/);
          const cli = spawnSync(
            process.execPath,
            [BIN, 'resolve', key, '--as', 'applied', '--reason', 'deploy log shows the release went out'],
            { encoding: 'utf8', env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') } },
          );
          expect(cli.stderr).toBe('');
          expect(cli.status).toBe(0);
          expect(cli.stdout).toContain(`: COMPLETED (settled by operator:${TEST_OPERATOR})`);
        },
      });
      // The command died with its worker (it never finished) and nobody ran it again.
      const log = fs.existsSync(`${file}.log`) ? fs.readFileSync(`${file}.log`, 'utf8') : '';
      expect(['', 'begun\n']).toContain(log);
      expect(result.calls[0]).toMatchObject({ tool: 'bash_execute', state: 'COMPLETED', resolution: 'settled_by_operator' });
      expect(record).toMatchObject({
        settledBy: `operator:${TEST_OPERATOR}`,
        settleReason: 'deploy log shows the release went out',
        generation: 1,
      });
      expect(events.map((e) => [e.fromState, e.toState, e.actor])).toEqual([
        ['UNSEEN', 'IN_FLIGHT', expect.stringMatching(/^worker:/)],
        ['IN_FLIGHT', 'IN_FLIGHT', expect.stringMatching(/^worker:/)],
        ['IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'],
        ['IN_DOUBT', 'COMPLETED', `operator:${TEST_OPERATOR}`],
      ]);
    },
  );

  // Issue 27: a sandboxed command that reaches the worker's run directory (a sandbox escape, a
  // non-root worker) deletes another call's markers; that call's worker dies mid-command. The
  // probe must not read the missing files as "never started": the command ran, once.
  it(
    'markers deleted by a sandboxed command, worker killed mid-command: the probe does not answer not applied and the command runs once',
    { timeout: 150_000 },
    async () => {
      const { result, file, events, record } = await crashScenario(null, {
        call: (f) => ({
          call_id: 'deploy',
          tool: 'bash_execute',
          args: { command: `echo deploy started >> ${path.basename(f)}.log; sleep 30; echo deploy finished >> ${path.basename(f)}.log` },
        }),
        beforeKill: async (f, trajectoryId) => {
          await waitFor(async () => fs.existsSync(`${f}.log`));
          const { key, intent } = (await store.list({ trajectoryId }))[0]!;
          const markers = intent as { runs?: { root: string }; markers?: { root: string } };
          const dir = path.join((markers.markers ?? markers.runs)!.root, key, '1');
          expect(fs.readdirSync(dir)).not.toEqual([]);
          // What the escaped command does: every file the worker keeps for this run, gone.
          for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name), { force: true });
        },
        whileRunning: async (handle, key) => {
          // Either the trajectory waits for an operator, or (the defect) it ran the command again and finished.
          await waitFor(async () => {
            const d = await handle.describe();
            return d.status.name !== 'RUNNING' || d.typedSearchAttributes.get(SA_TRAJECTORY_STATUS) === 'waiting_operator';
          });
          if ((await handle.describe()).status.name !== 'RUNNING') return;
          expect(await currentDetails(handle)).toMatch(/started/);
          const claim = { key, verdict: 'applied', reason: 'deploy log shows one start', generation: 1 } as const;
          const credential = signed({ purpose: 'settle', namespace: 'default', trajectoryId: handle.workflowId, ...claim });
          await handle.executeUpdate(settleCallUpdate, { args: [{ ...claim, operator: TEST_OPERATOR, credential }] });
        },
      });
      expect(fs.readFileSync(`${file}.log`, 'utf8')).toBe('deploy started\n');
      expect(events.map((e) => e.toState)).not.toContain('NOT_EXECUTED');
      expect(result.calls[0]).toMatchObject({ tool: 'bash_execute', state: 'COMPLETED', resolution: 'settled_by_operator' });
      expect(record).toMatchObject({ generation: 1, settledBy: `operator:${TEST_OPERATOR}` });
    },
  );
});

/** The trajectory's current details (what `settle status` shows). */
async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata = await handle.query<{ currentDetails?: string | null }>('__temporal_workflow_metadata');
  return metadata.currentDetails ?? '';
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}
