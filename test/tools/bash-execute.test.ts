/** bash_execute (A2) in bubblewrap, against real processes. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashExecute } from '../../activities/tools/bash-execute';
import { sandboxAvailability, MAX_OUTPUT_BYTES } from '../../activities/tools/sandbox';
import { runSettled, applyProbe } from '../../activities/settled/run-settled';
import { deriveKey } from '../../core/key';
import type { BashExecuteArgs, BashExecuteIntent } from '../../core/tools/bash-execute';
import { NoEffect } from '../../activities/settled/settled-tool';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

async function run(command: string, opts: { timeout_ms?: number; network?: boolean; egress?: string[]; workspace?: string } = {}) {
  const workspace = opts.workspace ?? tempWorkspace('bash');
  const args: BashExecuteArgs = { command, timeout_ms: opts.timeout_ms ?? 30_000 };
  const env = {
    workspace,
    workspaceRoot: testWorkspaceRoot(),
    network: opts.network ?? false,
    ...(opts.egress ? { egress: opts.egress } : {}),
  };
  const plan = await bashExecute.plan(args, env);
  if (plan.kind !== 'proceed') throw new Error('expected proceed');
  const obs = await bashExecute.execute(args, plan.intent, env, {
    key: uniqueId('bash'),
    generation: 1,
    assertLeaseHeld: () => {},
    ledger: store.runs,
  });
  return { obs, workspace, intent: plan.intent };
}

describe('bash_execute', () => {
  it('runs in bubblewrap on this machine (the sandbox the tests rely on)', () => {
    expect(sandboxAvailability()).toEqual({ kind: 'bubblewrap', note: null });
  });

  it('runs in the workspace with a scrubbed environment and reports stdout, stderr and status', async () => {
    process.env.SETTLE_TEST_SECRET = 'must-not-leak';
    const { obs, workspace } = await run('pwd; echo "secret=${SETTLE_TEST_SECRET:-unset} home=$HOME"; echo oops >&2; exit 3');
    delete process.env.SETTLE_TEST_SECRET;
    const { resources: _totals, ...rest } = obs; // the call's totals where there are per-call cgroups (call-cgroup.test.ts)
    expect(rest).toEqual({ output: `${workspace}\nsecret=unset home=/tmp\n`, error: 'oops\n', exit_status: 3, truncated: false });
  });

  it('can write the workspace but not the system, and /tmp is private', async () => {
    const hostMarker = `/tmp/settle-host-marker-${process.pid}`;
    fs.writeFileSync(hostMarker, 'host');
    try {
      const { obs, workspace } = await run(
        `echo hi > out.txt && touch /etc/settle-probe 2>/dev/null; echo "etc=$?"; test -e ${hostMarker} && echo host-tmp-visible || echo host-tmp-hidden`,
      );
      expect(fs.readFileSync(path.join(workspace, 'out.txt'), 'utf8')).toBe('hi\n');
      expect(obs.output).toBe('etc=1\nhost-tmp-hidden\n');
      expect(fs.existsSync('/etc/settle-probe')).toBe(false);
    } finally {
      fs.rmSync(hostMarker, { force: true });
    }
  });

  it('kills the whole process group at the time limit: no orphan survives', async () => {
    const marker = 987_000 + Math.floor(Math.random() * 999);
    const started = performance.now();
    const { obs } = await run(`sleep ${marker} & sleep ${marker} & echo started; wait`, { timeout_ms: 1000 });
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(obs.exit_status).toBe(124);
    expect(obs.output).toBe('started\n');
    expect(obs.error).toMatch(/timed out after 1000 ms; the process group was killed/);
    await new Promise((r) => setTimeout(r, 200));
    const survivors = spawnSync('pgrep', ['-f', `sleep ${marker}`], { encoding: 'utf8' }).stdout.trim();
    expect(survivors).toBe('');
  });

  it('truncates long output with a marker', async () => {
    const { obs } = await run('head -c 200000 /dev/zero | tr "\\0" a; echo; echo done');
    expect(obs.truncated).toBe(true);
    expect(obs.output.length).toBeLessThan(MAX_OUTPUT_BYTES + 100);
    expect(obs.output).toMatch(/\[… truncated by settle …\]$/);
  });

  describe('network', () => {
    let server: net.Server;
    let port: number;
    beforeAll(async () => {
      server = net.createServer((s) => s.end('hello from the host\n'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as net.AddressInfo).port;
    });
    afterAll(() => server.close());

    const probe = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 || echo no-connection`;

    it('is blocked without the connect right', async () => {
      const { obs } = await run(probe());
      expect(obs.output).toBe('no-connection\n');
    });

    // Issue 12 item 4: with the host's network shared, a command holding `connect` reached the
    // worker's own services on loopback (its Postgres). Now `connect` reaches only the
    // capability's host objects, through the egress proxy (test/tools/egress.test.ts); the
    // sandbox itself never has a route to the host's loopback.
    it("with the connect right still cannot reach the host's loopback services, and says so", async () => {
      const { obs, intent } = await run(probe(), { network: true });
      expect(obs.output).toBe('no-connection\n');
      expect(obs.error).toMatch(/the capability names no host: objects/);
      expect(intent.network).toBe(true);
      const granted = await run(probe(), { network: true, egress: [`host:127.0.0.1:${port}`] });
      expect(granted.obs.output).toBe('no-connection\n');
    });
  });

  describe('a worker killed with SIGKILL takes its command along', () => {
    const FIXTURE = fileURLToPath(new URL('./die-with-worker.fixture.ts', import.meta.url));

    /** Runs the command in a stand-in worker that kills itself at `mode`; returns the log once the command's processes are gone. */
    async function killedWorker(mode: 'spawn' | 'started') {
      const workspace = tempWorkspace('bash');
      const tag = `${process.pid}${Math.floor(Math.random() * 1e6)}`;
      const command = `echo begun >> log.txt; sleep 1.${tag}; echo finished >> log.txt`;
      const worker = spawnSync(process.execPath, ['--import', 'tsx', FIXTURE, mode, workspace, command], { encoding: 'utf8' });
      expect(worker.signal).toBe('SIGKILL');
      // Until nothing of the command is left (an orphaned sandbox would sleep, then write "finished").
      while (spawnSync('pgrep', ['-f', `sleep 1.${tag}`]).status === 0) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 100));
      const log = path.join(workspace, 'log.txt');
      return fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
    }

    it('killed the instant the sandbox is spawned, before bubblewrap armed --die-with-parent: the command never runs', async () => {
      // A race without the start gate (an orphaned sandbox ran the command about half the time): try it a few times.
      const logs = [];
      for (let i = 0; i < 5; i++) logs.push(await killedWorker('spawn'));
      expect(logs).toEqual(['', '', '', '', '']);
    });

    it('killed once the command started: the command dies with it and never finishes', async () => {
      expect(['', 'begun\n']).toContain(await killedWorker('started'));
    });
  });

  describe('probe (run markers, docs/design.md#shell-run-markers)', () => {
    const probe = (args: BashExecuteArgs, intent: BashExecuteIntent, workspace: string, key: string) =>
      bashExecute.probe(args, intent, { workspace }, { key, generation: 1, ledger: store.runs });

    /** A claimed call with its intent recorded, as the executor left it; the test plays the executor. */
    async function claimed(command: string) {
      const workspace = tempWorkspace('bash');
      const trajectoryId = uniqueId('bash');
      const args: BashExecuteArgs = { command, timeout_ms: 30_000 };
      const key = deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args });
      const call = { key, trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args };
      const plan = await bashExecute.plan(args, { workspace, workspaceRoot: testWorkspaceRoot() });
      if (plan.kind !== 'proceed') throw new Error('expected proceed');
      const claim = await store.claim(call, { leaseMs: 60_000, holder: 'dead', intent: plan.intent });
      expect(claim.kind).toBe('claimed');
      const execute = () =>
        bashExecute.execute(
          args,
          plan.intent,
          { workspace, workspaceRoot: testWorkspaceRoot() },
          { key, generation: 1, assertLeaseHeld: () => {}, ledger: store.runs },
        );
      const inDoubt = async () => {
        await store.markInDoubt(key, 1, 'worker died', 'worker:dead');
        const record = (await store.get(key))!;
        const verdict = await bashExecute.probe(
          args,
          record.intent as never,
          { workspace, workspaceRoot: testWorkspaceRoot() },
          { key, generation: 1, ledger: store.runs },
        );
        return { record, verdict };
      };
      return { workspace, call, args, execute, inDoubt };
    }

    it('no start row: NOT_EXECUTED for certain, and the fence keeps a paused executor from starting it later', async () => {
      const { workspace, call, args, execute, inDoubt } = await claimed('echo deploy >> log.txt');
      // The executor recorded its intent and stopped before the start row.
      const { record, verdict } = await inDoubt();
      expect(verdict).toMatchObject({ verdict: 'not_applied', detail: expect.stringMatching(/never started \(fenced now/) });
      expect(await applyProbe(store, record, verdict)).toEqual({ state: 'NOT_EXECUTED', applied: true, settledBy: 'probe:bash_execute' });
      // Repeatable: the fence answers the same.
      expect(
        await bashExecute.probe(
          args,
          record.intent as never,
          { workspace, workspaceRoot: testWorkspaceRoot() },
          { key: call.key, generation: 1, ledger: store.runs },
        ),
      ).toMatchObject({
        verdict: 'not_applied',
      });
      // The paused executor resumes: its start row is refused, nothing runs.
      await expect(execute()).rejects.toBeInstanceOf(NoEffect);
      expect(fs.existsSync(path.join(workspace, 'log.txt'))).toBe(false);
      // The next generation runs it, once.
      const outcome = await runSettled(
        store,
        bashExecute,
        call,
        { workspace, workspaceRoot: testWorkspaceRoot() },
        { leaseMs: 5000, holder: 'w2' },
      );
      expect(outcome).toMatchObject({ kind: 'completed', generation: 2 });
      expect(fs.readFileSync(path.join(workspace, 'log.txt'), 'utf8')).toBe('deploy\n');
    });

    it('an exit marker: COMPLETED with the recorded output and status, nothing runs again', async () => {
      const { workspace, call, execute, inDoubt } = await claimed('echo deploy >> log.txt; echo out; echo err >&2; exit 4');
      // The command ran to its end; the executor died before recording the result.
      const observation = await execute();
      // (plus the call's resource totals where the worker has per-call cgroups, kept in the exit marker too)
      expect(observation).toMatchObject({ output: 'out\n', error: 'err\n', exit_status: 4, truncated: false });
      const { record, verdict } = await inDoubt();
      expect(verdict).toEqual({ verdict: 'applied', result: observation, detail: expect.stringMatching(/ended with status 4/) });
      expect(await applyProbe(store, record, verdict)).toEqual({ state: 'COMPLETED', applied: true, settledBy: 'probe:bash_execute' });
      const again = await runSettled(
        store,
        bashExecute,
        call,
        { workspace, workspaceRoot: testWorkspaceRoot() },
        { leaseMs: 5000, holder: 'w2' },
      );
      expect(again).toMatchObject({ kind: 'completed', replayed: true, result: observation });
      expect(fs.readFileSync(path.join(workspace, 'log.txt'), 'utf8')).toBe('deploy\n');
    });

    it('started without an exit: unknown, saying the command still runs; once it ends, COMPLETED', async () => {
      const { workspace, call, args, execute, inDoubt } = await claimed(
        'echo begun >> log.txt; while [ ! -e go ]; do sleep 0.05; done; echo ended >> log.txt',
      );
      const running = execute();
      while (!fs.existsSync(path.join(workspace, 'log.txt'))) await new Promise((r) => setTimeout(r, 20));
      const { record, verdict } = await inDoubt();
      expect(verdict).toMatchObject({
        verdict: 'unknown',
        detail: expect.stringMatching(/started and no exit was recorded: it is still running \(pid \d+\) under its worker, which is alive/),
      });
      expect(await applyProbe(store, record, verdict)).toEqual({ state: 'IN_DOUBT', applied: false, settledBy: null });
      // While it is in doubt, nobody runs it again.
      expect(
        (await runSettled(store, bashExecute, call, { workspace, workspaceRoot: testWorkspaceRoot() }, { leaseMs: 5000, holder: 'w2' }))
          .kind,
      ).toBe('in_doubt');
      fs.writeFileSync(path.join(workspace, 'go'), '');
      await running;
      expect(
        await bashExecute.probe(
          args,
          record.intent as never,
          { workspace, workspaceRoot: testWorkspaceRoot() },
          { key: call.key, generation: 1, ledger: store.runs },
        ),
      ).toMatchObject({
        verdict: 'applied',
      });
      expect(fs.readFileSync(path.join(workspace, 'log.txt'), 'utf8')).toBe('begun\nended\n');
    });

    it('markers not readable where the probe runs (another root id): unknown for a started run', async () => {
      const { args, call, workspace, execute, inDoubt } = await claimed('echo deploy >> log.txt');
      await execute();
      const { record } = await inDoubt();
      const intent = { ...(record.intent as BashExecuteIntent), markers: { root: tempWorkspace('other-root'), id: 'another-id' } };
      expect(
        await bashExecute.probe(
          args,
          intent,
          { workspace, workspaceRoot: testWorkspaceRoot() },
          { key: call.key, generation: 1, ledger: store.runs },
        ),
      ).toMatchObject({
        verdict: 'unknown',
        detail: expect.stringMatching(/started \(database\); the run markers are not readable here/),
      });
    });

    it('an intent recorded before run markers existed: unknown, for an operator', async () => {
      const { args, call, workspace, inDoubt } = await claimed('echo deploy >> log.txt');
      const { record } = await inDoubt();
      const { markers: _markers, ...intent } = record.intent as BashExecuteIntent;
      expect(
        await bashExecute.probe(
          args,
          intent,
          { workspace, workspaceRoot: testWorkspaceRoot() },
          { key: call.key, generation: 1, ledger: store.runs },
        ),
      ).toMatchObject({
        verdict: 'unknown',
        detail: expect.stringMatching(/no start record was kept/),
      });
    });

    // Issue 27: the files are reachable by a command that escapes its sandbox as the worker's user.
    describe('evidence a sandboxed command could tamper with', () => {
      const runDirOf = (intent: BashExecuteIntent, key: string) => path.join(intent.markers!.root, key, '1');

      it('the run directory emptied while the command runs: unknown (the database says it started), never not applied', async () => {
        const { args, call, workspace, execute, inDoubt } = await claimed(
          'echo begun >> log.txt; while [ ! -e go ]; do sleep 0.05; done; echo ended >> log.txt',
        );
        const running = execute();
        while (!fs.existsSync(path.join(workspace, 'log.txt'))) await new Promise((r) => setTimeout(r, 20));
        const { record } = await inDoubt();
        const dir = runDirOf(record.intent as BashExecuteIntent, call.key);
        for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name), { force: true });
        const verdict = await probe(args, record.intent as BashExecuteIntent, workspace, call.key);
        expect(verdict).toMatchObject({ verdict: 'unknown', detail: expect.stringMatching(/started and no exit was recorded/) });
        expect(await applyProbe(store, record, verdict)).toEqual({ state: 'IN_DOUBT', applied: false, settledBy: null });
        fs.writeFileSync(path.join(workspace, 'go'), '');
        await running;
        expect(fs.readFileSync(path.join(workspace, 'log.txt'), 'utf8')).toBe('begun\nended\n');
      });

      it('a pid marker rewritten to name another process: "cannot tell", so no probe ever kills what it names', async () => {
        const { args, call, workspace, execute, inDoubt } = await claimed('echo begun >> log.txt; while [ ! -e go ]; do sleep 0.05; done');
        const running = execute();
        while (!fs.existsSync(path.join(workspace, 'log.txt'))) await new Promise((r) => setTimeout(r, 20));
        const { record } = await inDoubt();
        const pidFile = path.join(runDirOf(record.intent as BashExecuteIntent, call.key), 'pid');
        const marker = JSON.parse(fs.readFileSync(pidFile, 'utf8')) as Record<string, unknown>;
        fs.writeFileSync(pidFile, JSON.stringify({ ...marker, pid: process.pid }));
        expect(await probe(args, record.intent as BashExecuteIntent, workspace, call.key)).toMatchObject({
          verdict: 'unknown',
          detail: expect.stringMatching(/whether it still runs is unknown \(the pid marker .* does not carry this execution's seal/),
          final: false,
        });
        fs.writeFileSync(path.join(workspace, 'go'), '');
        await running;
      });

      it('an exit marker altered after the command ended: unknown, not the forged result', async () => {
        const { args, call, workspace, execute, inDoubt } = await claimed('echo deploy >> log.txt; echo real; exit 3');
        await execute();
        const { record } = await inDoubt();
        const dir = runDirOf(record.intent as BashExecuteIntent, call.key);
        fs.writeFileSync(path.join(dir, 'stdout'), 'forged\n');
        const verdict = await probe(args, record.intent as BashExecuteIntent, workspace, call.key);
        expect(verdict).toMatchObject({ verdict: 'unknown', detail: expect.stringMatching(/does not carry this execution's seal/) });
        // A marker rewritten whole, without the seal only the worker and the database know: the same.
        const exit = JSON.parse(fs.readFileSync(path.join(dir, 'exit'), 'utf8')) as Record<string, unknown>;
        fs.writeFileSync(path.join(dir, 'stdout'), 'real\n');
        fs.writeFileSync(path.join(dir, 'exit'), JSON.stringify({ ...exit, exit_status: 0 }));
        expect(await probe(args, record.intent as BashExecuteIntent, workspace, call.key)).toMatchObject({ verdict: 'unknown' });
        fs.writeFileSync(path.join(dir, 'exit'), JSON.stringify(exit));
        expect(await probe(args, record.intent as BashExecuteIntent, workspace, call.key)).toMatchObject({
          verdict: 'applied',
          result: { output: 'real\n', exit_status: 3 },
        });
      });

      it('an exit marker planted for a run that never started: unknown, and the fence still keeps it from starting', async () => {
        const { args, call, workspace, execute, inDoubt } = await claimed('echo deploy >> log.txt');
        const { record } = await inDoubt();
        const intent = record.intent as BashExecuteIntent;
        const dir = runDirOf(intent, call.key);
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, 'stdout'), 'deployed\n');
        fs.writeFileSync(path.join(dir, 'stderr'), '');
        fs.writeFileSync(
          path.join(dir, 'exit'),
          JSON.stringify({ exit_status: 0, timed_out: false, truncated: false, sandbox: 'bubblewrap', note: null, at: '' }),
        );
        expect(await probe(args, intent, workspace, call.key)).toMatchObject({
          verdict: 'unknown',
          detail: expect.stringMatching(/the database says this execution was fenced and never started: evidence was tampered with/),
        });
        await expect(execute()).rejects.toBeInstanceOf(NoEffect);
        expect(fs.existsSync(path.join(workspace, 'log.txt'))).toBe(false);
      });

      it('an intent recorded before the start ledger, no start file: unknown (a sandboxed command could have removed it)', async () => {
        const { args, call, workspace, inDoubt } = await claimed('echo deploy >> log.txt');
        const { record } = await inDoubt();
        const { markers, ...rest } = record.intent as BashExecuteIntent;
        expect(await probe(args, { ...rest, runs: markers }, workspace, call.key)).toMatchObject({
          verdict: 'unknown',
          detail: expect.stringMatching(/kept the start only in a file a sandboxed command could remove/),
        });
      });
    });

    it('the executor drops its markers once it recorded the outcome itself', async () => {
      const workspace = tempWorkspace('bash');
      const trajectoryId = uniqueId('bash');
      const args: BashExecuteArgs = { command: 'true', timeout_ms: 30_000 };
      const key = deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args });
      const outcome = await runSettled(
        store,
        bashExecute,
        { key, trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args },
        { workspace, workspaceRoot: testWorkspaceRoot() },
        {
          leaseMs: 5000,
          holder: 'w1',
        },
      );
      expect(outcome).toMatchObject({ kind: 'completed', replayed: false });
      const intent = (await store.get(key))!.intent as BashExecuteIntent;
      expect(fs.existsSync(path.join(intent.markers!.root, key))).toBe(false);
      expect(fs.existsSync(path.join(intent.markers!.root, 'id'))).toBe(true);
      // The start row stays with the record, and goes when retention purges it.
      const startRows = () => db.selectFrom('settle_shell_runs').select('kind').where('key', '=', key).execute();
      expect(await startRows()).toEqual([{ kind: 'started' }]);
      expect(await store.purgeSettled(0, { trajectoryIds: [trajectoryId] })).toBe(1);
      expect(await startRows()).toEqual([]);
    });
  });
});
