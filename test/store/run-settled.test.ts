/**
 * The settled execution path (claim → plan → intent → execute → complete) and probe
 * application, with real files and real Postgres.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { deriveKey } from '../../core/key';
import type { ProbeVerdict } from '../../core/records';
import { applyProbe, runSettled } from '../../activities/settled/run-settled';
import { NoEffect, type SettledTool } from '../../activities/settled/settled-tool';
import { fileEdit, fileEditHooks } from '../../activities/tools/file-edit';
import type { FileEditArgs } from '../../core/tools/file-edit';
import { inject } from 'vitest';
import { sql } from 'kysely';
import { openDatabase } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { SettleMetrics } from '../../activities/observability/metrics';
import { onCallEvent } from '../../activities/observability/events';

const db = openTestDb();
const store = testStore(db);
afterAll(() => db.destroy());
afterEach(() => {
  delete fileEditHooks.beforeRename;
  delete fileEditHooks.afterLeaseCheck;
  delete fileEditHooks.afterRename;
});

function callFor<A extends Record<string, unknown>>(tool: string, args: A) {
  const trajectoryId = uniqueId('run');
  return { key: deriveKey({ trajectoryId, turn: 0, callId: 'c1', tool, args }), trajectoryId, turn: 0, callId: 'c1', tool, args };
}

const run = { leaseMs: 5_000, holder: 'test-worker' };

/** A tool whose execute does what the test says, counting real executions. */
function scriptedTool(execute: () => Promise<string>): SettledTool<Record<string, unknown>, { n: number }, string> & { runs: number } {
  const tool = {
    name: 'scripted',
    runs: 0,
    plan: async () => ({ kind: 'proceed' as const, intent: { n: 1 } }),
    execute: async () => {
      tool.runs++;
      return execute();
    },
    probe: async (): Promise<ProbeVerdict<string>> => ({ verdict: 'unknown', detail: 'cannot see' }),
  };
  return tool;
}

describe('runSettled', () => {
  it('an exception during execution leaves IN_DOUBT, and a repeat is refused until settled', async () => {
    const tool = scriptedTool(async () => {
      throw new Error('connection reset after the request was sent');
    });
    const call = callFor('scripted', { x: 1 });
    const first = await runSettled(store, tool, call, { workspace: '/' }, run);
    expect(first).toMatchObject({ kind: 'in_doubt', generation: 1 });
    expect((await store.get(call.key))?.state).toBe('IN_DOUBT');

    const repeat = await runSettled(store, tool, call, { workspace: '/' }, run);
    expect(repeat.kind).toBe('in_doubt');
    expect(tool.runs).toBe(1);

    // Settled as not executed (by a probe or an operator), the next attempt claims generation 2.
    const record = (await store.get(call.key))!;
    await applyProbe(store, record, { verdict: 'not_applied', detail: 'checked' });
    const third = await runSettled(
      store,
      scriptedTool(async () => 'ok'),
      call,
      { workspace: '/' },
      run,
    );
    expect(third).toEqual({ kind: 'completed', result: 'ok', replayed: false, generation: 2 });
  });

  it('a NoEffect error releases the key to NOT_EXECUTED', async () => {
    const tool = scriptedTool(async () => {
      throw new NoEffect('precondition failed before any write');
    });
    const call = callFor('scripted', { x: 2 });
    expect(await runSettled(store, tool, call, { workspace: '/' }, run)).toMatchObject({ kind: 'released', generation: 1 });
    expect((await store.get(call.key))?.state).toBe('NOT_EXECUTED');
  });

  it("a retry of the attempt that completed the call (its report lost) says executed, not replayed; another activity's says replayed", async () => {
    const tool = scriptedTool(async () => 'ran-once');
    const call = callFor('scripted', { x: 'earlier-attempt' });
    // Holders as the activity writes them: <worker identity>#<activity id>@<attempt>.
    const first = await runSettled(store, tool, call, { workspace: '/' }, { ...run, holder: 'worker-a#7@1' });
    expect(first).toMatchObject({ kind: 'completed', replayed: false });
    const retry = await runSettled(store, tool, call, { workspace: '/' }, { ...run, holder: 'worker-b#7@2' });
    expect(retry).toEqual({ kind: 'completed', result: 'ran-once', replayed: false, generation: 1 });
    const otherActivity = await runSettled(store, tool, call, { workspace: '/' }, { ...run, holder: 'worker-b#12@1' });
    expect(otherActivity).toMatchObject({ kind: 'completed', replayed: true });
    const otherActivityRetried = await runSettled(store, tool, call, { workspace: '/' }, { ...run, holder: 'worker-c#12@3' });
    expect(otherActivityRetried).toMatchObject({ kind: 'completed', replayed: true });
    expect(tool.runs).toBe(1);
  });

  it('a repeat of a completed call is replayed without executing', async () => {
    const tool = scriptedTool(async () => 'result-1');
    const call = callFor('scripted', { x: 3 });
    expect(await runSettled(store, tool, call, { workspace: '/' }, run)).toMatchObject({ kind: 'completed', replayed: false });
    expect(await runSettled(store, tool, call, { workspace: '/' }, run)).toEqual({
      kind: 'completed',
      result: 'result-1',
      replayed: true,
      generation: 1,
    });
    expect(tool.runs).toBe(1);
  });

  it('a concurrent repeat while the first is running sees busy', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tool = scriptedTool(async () => {
      await gate;
      return 'slow';
    });
    const call = callFor('scripted', { x: 4 });
    const first = runSettled(store, tool, call, { workspace: '/' }, run);
    await waitFor(async () => (await store.get(call.key))?.intent != null);
    expect((await runSettled(store, tool, call, { workspace: '/' }, run)).kind).toBe('busy');
    release();
    expect((await first).kind).toBe('completed');
    expect(tool.runs).toBe(1);
  });

  it('a completion that lands on a record gone IN_DOUBT meanwhile settles it, and is counted as settled by the executor', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tool = scriptedTool(async () => {
      await gate;
      return 'late';
    });
    const call = callFor('scripted', { x: 5 });
    const metrics = new SettleMetrics();
    const stop = onCallEvent((e) => metrics.count(e));
    try {
      const first = runSettled(store, tool, call, { workspace: '/' }, run);
      await waitFor(async () => (await store.get(call.key))?.intent != null);
      // The sweeper (or a claimer) turned it IN_DOUBT while the effect was still running.
      expect((await store.markInDoubt(call.key, 1, 'lease lapsed', 'lease-expiry')).ok).toBe(true);
      release();
      expect(await first).toMatchObject({ kind: 'completed', result: 'late', replayed: false });
    } finally {
      stop();
    }
    expect(await store.get(call.key)).toMatchObject({ state: 'COMPLETED', settledBy: 'worker:test-worker' });
    const text = metrics.render({ installationGauges: false });
    expect(text).toContain('settle_settled_total{by="executor",state="COMPLETED"} 1');
    // Series known in advance are reported from 0, so that increase() sees their first increment.
    expect(text).toContain('settle_settled_total{by="operator",state="NOT_EXECUTED"} 0');
    expect(text).toContain('settle_in_doubt_total{tool="file_edit",cause="lease_expired"} 0');
    expect(text).toContain('settle_fenced_writes_total{op="complete"} 0');
  });

  it('a claim that meets the lease of a holder that stopped renewing waits for it to lapse and finds the call IN_DOUBT', async () => {
    const tool = scriptedTool(async () => 'must not run');
    const call = callFor('scripted', { x: 41 });
    // A holder that claimed the call and died: nobody renews its lease.
    expect((await store.claim(call, { leaseMs: 1_000, holder: 'dead-worker', intent: { n: 1 } })).kind).toBe('claimed');
    let heartbeats = 0;
    const outcome = await runSettled(store, tool, call, { workspace: '/' }, { leaseMs: 1_000, holder: 'b', heartbeat: () => heartbeats++ });
    // Not "busy" (a workflow round trip and a timer later, the same claim again): the lapse found at once.
    expect(outcome).toMatchObject({ kind: 'in_doubt', generation: 1 });
    expect((await store.get(call.key))?.state).toBe('IN_DOUBT');
    expect(tool.runs).toBe(0);
    expect(heartbeats).toBeGreaterThanOrEqual(1);
  });

  it('the claim that finds a lease lapsed probes at once: the record is settled before the workflow looks', async () => {
    const tool = scriptedTool(async () => 'must not run');
    tool.probe = async () => ({ verdict: 'applied', result: 'done by the dead holder', detail: 'seen in the facts' });
    const call = callFor('scripted', { x: 42 });
    expect((await store.claim(call, { leaseMs: 1_000, holder: 'dead-worker', intent: { n: 1 } })).kind).toBe('claimed');
    const outcome = await runSettled(store, tool, call, { workspace: '/' }, { leaseMs: 1_000, holder: 'b' });
    // The workflow still hears "in doubt" and runs its probe, which finds the record settled.
    expect(outcome).toMatchObject({ kind: 'in_doubt', generation: 1 });
    const record = await store.get(call.key);
    expect(record).toMatchObject({ state: 'COMPLETED', result: 'done by the dead holder', settledBy: 'probe:scripted' });
    expect(tool.runs).toBe(0);
  });

  it('renews the lease while executing (heartbeats), so a long call is not taken over', async () => {
    let heartbeats = 0;
    const tool = scriptedTool(async () => {
      await sleep(2_000);
      return 'long';
    });
    const call = callFor('scripted', { x: 5 });
    const running = runSettled(store, tool, call, { workspace: '/' }, { leaseMs: 1_200, holder: 'h', heartbeat: () => heartbeats++ });
    await sleep(1_600);
    // Past the original lease: a claimer must still see busy, not an expired lease.
    expect((await store.claim(call, { leaseMs: 1_000, holder: 'other' })).kind).toBe('busy');
    expect(await running).toMatchObject({ kind: 'completed', replayed: false });
    expect(heartbeats).toBeGreaterThanOrEqual(2);
  });

  it('an executor that lost its lease does not start the effect (checked right before it)', async () => {
    const workspace = tempWorkspace();
    const file = path.join(workspace, 'a.txt');
    fs.writeFileSync(file, 'alpha\n');
    const args: FileEditArgs = { path: file, old_str: 'alpha', new_str: 'beta', allow_multiple: false };
    const call = callFor('file_edit', args);
    // The process is paused (GC pause, SIGSTOP, overloaded host) between preparing and renaming
    // for longer than its lease: no timer runs, so no renewal happens. A synchronous sleep
    // reproduces exactly that.
    fileEditHooks.beforeRename = async () => {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 450);
    };
    const running = runSettled(store, fileEdit, call, { workspace }, { leaseMs: 400, holder: 'zombie' });
    const outcome = await running;
    expect(outcome.kind).toBe('released');
    expect((await store.get(call.key))?.detail).toMatch(/LeaseLost/);
    expect(fs.readFileSync(file, 'utf8')).toBe('alpha\n');
    expect(fs.readdirSync(workspace)).toEqual(['a.txt']); // temporary file cleaned up
  });
});

describe('file_edit intent and probe', () => {
  function setup(content = 'one two one\n') {
    const workspace = tempWorkspace();
    const file = path.join(workspace, 'f.txt');
    fs.writeFileSync(file, content);
    fs.chmodSync(file, 0o640);
    return { workspace, file };
  }

  it('records path and hashes before the effect, writes atomically, keeps the mode', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: '2', allow_multiple: false };
    const call = callFor('file_edit', args);
    const outcome = await runSettled(store, fileEdit, call, { workspace }, run);
    expect(outcome).toMatchObject({ kind: 'completed', result: { output: `replaced 1 block in ${file}`, error: null, exit_status: 0 } });
    expect(fs.readFileSync(file, 'utf8')).toBe('one 2 one\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
    const intent = (await store.get(call.key))!.intent as Record<string, unknown>;
    expect(intent).toMatchObject({ path: file, matches: 1 });
    expect(intent.sha256_before).toMatch(/^[0-9a-f]{64}$/);
    expect(intent.sha256_after).not.toBe(intent.sha256_before);
  });

  it('a settled edit is two statements, two commits: the claim records the intent (and counts the proposal), then complete', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: '2', allow_multiple: false };
    const call = callFor('file_edit', args);
    const statements: string[] = [];
    const logged = openDatabase(inject('databaseUrl'), { max: 2, log: (sql) => statements.push(sql) });
    try {
      const outcome = await runSettled(new EndpointStore(logged), fileEdit, call, { workspace }, { ...run, countProposal: true });
      expect(outcome).toMatchObject({ kind: 'completed', replayed: false });
    } finally {
      await logged.destroy();
    }
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/^with "claimed" as \(insert into "settle_endpoint_records"/);
    expect(statements[1]).toMatch(/update "settle_endpoint_records"/);
    // The trail reads as before: claim, intent (with the planned hashes), complete — in that order.
    const events = await store.events(call.key);
    expect(events.map((e) => [e.fromState, e.toState, (e.detail as { op?: string }).op ?? 'claim'])).toEqual([
      ['UNSEEN', 'IN_FLIGHT', 'claim'],
      ['IN_FLIGHT', 'IN_FLIGHT', 'intent'],
      ['IN_FLIGHT', 'COMPLETED', 'complete'],
    ]);
    const record = (await store.get(call.key))!;
    expect((events[1]!.detail as { intent: unknown }).intent).toEqual(record.intent);
    expect(record.intent).toMatchObject({ path: file, matches: 1 });
    // Counted once as a valid proposal, even when a retried attempt claims again (and replays).
    expect(await runSettled(store, fileEdit, call, { workspace }, { ...run, countProposal: true })).toMatchObject({ replayed: true });
    const counted = await sql<{ valid: boolean; tool: string }>`
      select valid, tool from settle_tool_calls where trajectory_id = ${call.trajectoryId}`.execute(db);
    expect(counted.rows).toEqual([{ valid: true, tool: 'file_edit' }]);
  });

  it('a claim that takes a NOT_EXECUTED record again stores the new intent; one that finds an expired lease keeps the old', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: '2', allow_multiple: false };
    const call = callFor('file_edit', args);
    const first = await store.claim(call, { leaseMs: 60_000, holder: 'a', intent: { n: 1 } });
    expect(first).toMatchObject({ kind: 'claimed', generation: 1 });
    expect((await store.releaseNoEffect(call.key, 1, 'nothing happened', 'worker:a')).ok).toBe(true);
    expect(await store.claim(call, { leaseMs: 1, holder: 'b', intent: { n: 2 } })).toMatchObject({ kind: 'claimed', generation: 2 });
    expect((await store.get(call.key))!.intent).toEqual({ n: 2 });
    await sleep(5);
    // The lease lapsed: this claim turns it IN_DOUBT and must not overwrite what the executor of generation 2 intended.
    expect(await store.claim(call, { leaseMs: 60_000, holder: 'c', intent: { n: 3 } })).toMatchObject({
      kind: 'in_doubt',
      leaseExpiredNow: true,
    });
    expect((await store.get(call.key))!).toMatchObject({ state: 'IN_DOUBT', generation: 2, intent: { n: 2 } });
    expect((await store.events(call.key)).filter((e) => (e.detail as { op?: string }).op === 'intent')).toHaveLength(2);
    void workspace;
  });

  it('zero matches, or several without allow_multiple, leave the file unchanged and name the count', async () => {
    const { workspace, file } = setup();
    const zero = await runSettled(
      store,
      fileEdit,
      callFor('file_edit', { path: file, old_str: 'three', new_str: '3', allow_multiple: false }),
      { workspace },
      run,
    );
    expect(zero).toMatchObject({ kind: 'completed', result: { error: expect.stringMatching(/old_str matched 0 blocks/), exit_status: 1 } });
    const two = await runSettled(
      store,
      fileEdit,
      callFor('file_edit', { path: file, old_str: 'one', new_str: '1', allow_multiple: false }),
      { workspace },
      run,
    );
    expect(two).toMatchObject({
      kind: 'completed',
      result: { error: expect.stringMatching(/old_str matched 2 blocks .*exactly one required/) },
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('one two one\n');
    const all = await runSettled(
      store,
      fileEdit,
      callFor('file_edit', { path: file, old_str: 'one', new_str: '$&1', allow_multiple: true }),
      { workspace },
      run,
    );
    expect(all).toMatchObject({ kind: 'completed', result: { output: expect.stringMatching(/replaced 2 blocks/) } });
    expect(fs.readFileSync(file, 'utf8')).toBe('$&1 two $&1\n');
  });

  it('an executor paused after its lease check: the probe withdraws the prepared edit, so resuming writes nothing', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: 'TWO', allow_multiple: false };
    const call = callFor('file_edit', args);
    let resume!: () => void;
    const paused = new Promise<void>((r) => (resume = r));
    let reached!: () => void;
    const atWindow = new Promise<void>((r) => (reached = r));
    fileEditHooks.afterLeaseCheck = async () => {
      // Past the lease check, before the rename, the process stops (SIGSTOP, a long GC) for longer
      // than its lease: no timer runs, so nothing renews it. Then it waits for the test.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 450);
      reached();
      await paused;
    };
    const zombie = runSettled(store, fileEdit, call, { workspace }, { leaseMs: 300, holder: 'zombie' });
    await atWindow;
    // Another executor finds the lapsed lease; the probe fences and decides from the file.
    expect((await store.claim(call, { leaseMs: 5_000, holder: 'w2' })).kind).toBe('in_doubt');
    const record = (await store.get(call.key))!;
    const verdict = await fileEdit.probe(args, record.intent as never, { workspace });
    expect(verdict).toMatchObject({ verdict: 'not_applied' });
    expect(await applyProbe(store, record, verdict)).toMatchObject({ state: 'NOT_EXECUTED', applied: true });
    resume();
    expect(await zombie).toMatchObject({ kind: 'released' }); // its own release was refused; the record says NOT_EXECUTED
    expect(fs.readFileSync(file, 'utf8')).toBe('one two one\n');
    expect(fs.readdirSync(workspace)).toEqual(['f.txt']);
    expect((await store.events(call.key)).at(-1)).toMatchObject({
      actor: 'worker:zombie',
      detail: { op: 'release', refused: expect.any(String) },
    });
  });

  it('an exception between write and rename provably had no effect: released, old file intact, no temporary file left', async () => {
    const { workspace, file } = setup();
    const call = callFor('file_edit', { path: file, old_str: 'two', new_str: 'TWO', allow_multiple: false });
    fileEditHooks.beforeRename = async () => {
      throw new Error('EACCES: permission denied');
    };
    const outcome = await runSettled(store, fileEdit, call, { workspace }, run);
    expect(outcome).toMatchObject({ kind: 'released', detail: expect.stringMatching(/file not touched: EACCES/) });
    expect((await store.get(call.key))?.state).toBe('NOT_EXECUTED');
    expect(fs.readFileSync(file, 'utf8')).toBe('one two one\n');
    expect(fs.readdirSync(workspace)).toEqual(['f.txt']);
  });

  it('the write is prepared while the claim commits: its temporary file exists before the claim answers, and only the rename follows it', async () => {
    const { workspace, file } = setup();
    const call = callFor('file_edit', { path: file, old_str: 'two', new_str: '2', allow_multiple: false });
    const seen: string[] = [];
    // The claim statement is held until the prepared file is there: red if the write waited for the claim.
    const holding = new EndpointStore(db);
    const claim = holding.claim.bind(holding);
    holding.claim = async (request, options) => {
      for (let i = 0; i < 200 && !fs.readdirSync(workspace).some((n) => n.endsWith('.tmp')); i++)
        await new Promise((r) => setTimeout(r, 5));
      seen.push(...fs.readdirSync(workspace).filter((n) => n.endsWith('.tmp')));
      return claim(request, options);
    };
    const outcome = await runSettled(holding, fileEdit, call, { workspace }, run);
    expect(outcome).toMatchObject({ kind: 'completed', replayed: false });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBe(path.basename(((await store.get(call.key))!.intent as { tmp_path: string }).tmp_path));
    expect(seen[0]).toContain(call.key.slice(0, 12));
    expect(fs.readFileSync(file, 'utf8')).toBe('one 2 one\n');
    expect(fs.readdirSync(workspace)).toEqual(['f.txt']);
  });

  it('a prepared write whose claim is not won is discarded: a replay and a failed claim leave no temporary file', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: '2', allow_multiple: false };
    const call = callFor('file_edit', args);
    expect(await runSettled(store, fileEdit, call, { workspace }, run)).toMatchObject({ kind: 'completed', replayed: false });
    // The file is back as it was, so the repeat plans (and prepares) the edit again: the claim finds the call completed.
    fs.writeFileSync(file, 'one two one\n');
    expect(await runSettled(store, fileEdit, call, { workspace }, run)).toMatchObject({ kind: 'completed', replayed: true });
    expect(fs.readFileSync(file, 'utf8')).toBe('one two one\n');
    expect(fs.readdirSync(workspace)).toEqual(['f.txt']);

    const failing = new EndpointStore(db);
    failing.claim = async () => {
      await new Promise((r) => setTimeout(r, 50)); // long enough for the write to be prepared
      throw new Error('connection terminated unexpectedly');
    };
    const other = callFor('file_edit', { ...args, new_str: 'TWO' });
    await expect(runSettled(failing, fileEdit, other, { workspace }, run)).rejects.toThrow(/connection terminated/);
    expect(fs.readdirSync(workspace)).toEqual(['f.txt']);
    expect(await store.get(other.key)).toBeUndefined();
  });

  it('a prepare that fails releases the call with nothing touched', async () => {
    const { workspace, file } = setup();
    const call = callFor('file_edit', { path: file, old_str: 'two', new_str: '2', allow_multiple: false });
    const failing: typeof fileEdit = {
      ...fileEdit,
      prepare: async () => {
        throw new Error('ENOSPC: no space left on device');
      },
    };
    const outcome = await runSettled(store, failing, call, { workspace }, run);
    expect(outcome).toMatchObject({
      kind: 'released',
      detail: expect.stringMatching(/could not prepare the effect, nothing touched: ENOSPC/),
    });
    expect((await store.get(call.key))?.state).toBe('NOT_EXECUTED');
    expect(fs.readFileSync(file, 'utf8')).toBe('one two one\n');
  });

  it("a retried attempt withdraws the temporary file its dead predecessor prepared but never recorded (the call's own only)", async () => {
    const { workspace, file } = setup();
    const call = callFor('file_edit', { path: file, old_str: 'two', new_str: '2', allow_multiple: false });
    // What an attempt killed between its write and its claim's commit leaves: a prepared file no record names.
    const litter = `.f.txt.settle-${call.key.slice(0, 12)}-0123456789ab.tmp`;
    const foreign = `.f.txt.settle-${'f'.repeat(12)}-0123456789ab.tmp`; // another call's: not ours to touch
    fs.writeFileSync(path.join(workspace, litter), 'one 2 one\n');
    fs.writeFileSync(path.join(workspace, foreign), 'other\n');
    // A first attempt does not look for predecessors (none can have died).
    const first = { ...call, key: call.key };
    expect(await runSettled(store, fileEdit, first, { workspace }, { ...run, retried: false })).toMatchObject({ kind: 'completed' });
    expect(fs.readdirSync(workspace).sort()).toEqual([foreign, litter, 'f.txt'].sort());
    fs.writeFileSync(file, 'one two one\n');
    const again = callFor('file_edit', { path: file, old_str: 'two', new_str: '2', allow_multiple: false });
    fs.renameSync(path.join(workspace, litter), path.join(workspace, `.f.txt.settle-${again.key.slice(0, 12)}-0123456789ab.tmp`));
    const outcome = await runSettled(store, fileEdit, again, { workspace }, { ...run, retried: true });
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ kind: 'completed', replayed: false });
    expect(fs.readdirSync(workspace).sort()).toEqual([foreign, 'f.txt'].sort());
    expect(fs.readFileSync(file, 'utf8')).toBe('one 2 one\n');
  });

  it('the probe says not applied when the file still has the before-hash', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: 'TWO', allow_multiple: false };
    const call = callFor('file_edit', args);
    // A worker claimed, recorded its intent, and died before the rename.
    const plan = await fileEdit.plan(args, { workspace });
    if (plan.kind !== 'proceed') throw new Error('expected a plan to proceed');
    await store.claim(call, { leaseMs: 60_000, holder: 'dead' });
    await store.recordIntent(call.key, 1, plan.intent, 'worker:dead');
    await store.markInDoubt(call.key, 1, 'worker died', 'worker:dead');

    const record = (await store.get(call.key))!;
    const verdict = await fileEdit.probe(args, record.intent as never, { workspace });
    expect(verdict.verdict).toBe('not_applied');
    expect(await applyProbe(store, record, verdict)).toEqual({ state: 'NOT_EXECUTED', applied: true, settledBy: 'probe:file_edit' });
    expect((await store.events(call.key)).at(-1)).toMatchObject({ toState: 'NOT_EXECUTED', actor: 'probe:file_edit' });
  });

  it('the probe says applied (result reconstructed) when the file has the expected after-hash', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: 'TWO', allow_multiple: false };
    const call = callFor('file_edit', args);
    // The rename happens, then the executor fails before it can complete the record.
    fileEditHooks.afterRename = async () => {
      throw new Error('EIO after the rename');
    };
    expect((await runSettled(store, fileEdit, call, { workspace }, run)).kind).toBe('in_doubt');
    expect(fs.readFileSync(file, 'utf8')).toBe('one TWO one\n');

    const record = (await store.get(call.key))!;
    const verdict = await fileEdit.probe(args, record.intent as never, { workspace });
    expect(verdict).toMatchObject({ verdict: 'applied', result: { output: `replaced 1 block in ${file}` } });
    expect(await applyProbe(store, record, verdict)).toEqual({ state: 'COMPLETED', applied: true, settledBy: 'probe:file_edit' });
    // A retry is now a replay, not a second edit.
    delete fileEditHooks.afterRename;
    expect(await runSettled(store, fileEdit, call, { workspace }, run)).toMatchObject({ kind: 'completed', replayed: true });
    expect(fs.readFileSync(file, 'utf8')).toBe('one TWO one\n');
  });

  it('the probe says unknown when the file matches neither hash', async () => {
    const { workspace, file } = setup();
    const args: FileEditArgs = { path: file, old_str: 'two', new_str: 'TWO', allow_multiple: false };
    const plan = await fileEdit.plan(args, { workspace });
    if (plan.kind !== 'proceed') throw new Error('expected a plan to proceed');
    fs.writeFileSync(file, 'someone else rewrote this\n');
    expect(await fileEdit.probe(args, plan.intent, { workspace })).toMatchObject({ verdict: 'unknown' });
    fs.rmSync(file);
    expect(await fileEdit.probe(args, plan.intent, { workspace })).toMatchObject({
      verdict: 'unknown',
      detail: expect.stringMatching(/no longer exists/),
    });
  });

  it('refuses paths outside the workspace with nothing touched', async () => {
    const { workspace } = setup();
    const sibling = `${workspace}-sibling`;
    fs.mkdirSync(sibling, { recursive: true });
    fs.writeFileSync(path.join(sibling, 'x.txt'), 'x');
    fs.symlinkSync(sibling, path.join(workspace, 'link'));
    for (const p of [
      path.join(sibling, 'x.txt'),
      path.join(workspace, 'link', 'x.txt'),
      `${workspace}/../${path.basename(sibling)}/x.txt`,
    ]) {
      const outcome = await runSettled(
        store,
        fileEdit,
        callFor('file_edit', { path: p, old_str: 'x', new_str: 'y', allow_multiple: false }),
        { workspace },
        run,
      );
      expect(outcome).toMatchObject({ kind: 'completed', result: { error: expect.stringMatching(/^refused: args\.path must/) } });
    }
    expect(fs.readFileSync(path.join(sibling, 'x.txt'), 'utf8')).toBe('x');
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(20);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
