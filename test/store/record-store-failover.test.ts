/**
 * A real failover of a replicated PostgreSQL 15 behind PgBouncer (transaction mode) in the middle
 * of a call (chaos/infra/replicated-record-store.ts): the primary SIGKILLed after the claim
 * committed, the standby promoted, the pooler re-pointed. Asynchronously replicated, the promoted
 * standby never received the claim: the executor writes its record back with what it knows, so
 * the retry replays the result (or is refused, in doubt) instead of running the effect again.
 * Synchronously replicated, nothing is lost and nothing is written back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, useUnnamedStatements } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { runSettled, type ClaimEvidence } from '../../activities/settled/run-settled';
import type { SettledTool } from '../../activities/settled/settled-tool';
import { onCallEvent, type CallEvent } from '../../activities/observability/events';
import { ReplicatedRecordStore, type Replication } from '../../chaos/infra/replicated-record-store';
import { deriveKey } from '../../core/key';
import type { ProbeVerdict } from '../../core/records';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function storeOn(replication: Replication) {
  const recordStore = await ReplicatedRecordStore.start(replication);
  cleanups.push(() => recordStore.destroy());
  const db = openDatabase(recordStore.url, { max: 2 });
  useUnnamedStatements(db);
  cleanups.push(() => db.destroy());
  return { recordStore, store: new EndpointStore(db) };
}

function callFor(name: string) {
  const args = { n: 1 };
  const trajectoryId = `${name}-${process.pid}-${Date.now()}`;
  return {
    key: deriveKey({ trajectoryId, turn: 0, callId: 'c1', tool: 'scripted', args }),
    trajectoryId,
    turn: 0,
    callId: 'c1',
    tool: 'scripted',
    args,
  };
}

/** A tool whose effect is counted here and whose execution does what the test says (a failover). */
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

const run = { leaseMs: 10_000, holder: 'w1' };

function events(): CallEvent[] {
  const seen: CallEvent[] = [];
  cleanups.push(async () => stop());
  const stop = onCallEvent((e) => seen.push(e));
  return seen;
}

describe('a failover of the record store in the middle of a call', { timeout: 180_000 }, () => {
  it('asynchronous: the claim is lost with the primary; its executor writes the record back COMPLETED and the retry replays it', async () => {
    const { recordStore, store } = await storeOn('async');
    const seen = events();
    await recordStore.holdReplication(); // the standby receives nothing from here on
    const call = callFor('async-complete');
    const tool = scriptedTool(async () => {
      const { inFlight } = await recordStore.failOverNow();
      expect(inFlight).toContain(call.key); // the old primary had the claim; the promoted standby never got it
      return 'done';
    });
    const first = await runSettled(store, tool, call, { workspace: '/' }, run);
    expect(first).toEqual({ kind: 'completed', result: 'done', replayed: false, generation: 1 });
    expect(seen).toContainEqual(expect.objectContaining({ event: 'record_written_back', state: 'COMPLETED', written: true }));
    const record = await store.get(call.key);
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 1, result: 'done', intent: { n: 1 }, settledBy: 'worker:w1' });
    // The completion refused (no record: its event says so), then the write-back.
    const trail = await store.events(call.key);
    expect(trail.map((e) => [e.fromState, e.toState, (e.detail as { op?: string }).op])).toEqual([
      ['UNSEEN', 'UNSEEN', 'complete'],
      ['UNSEEN', 'COMPLETED', 'write_back'],
    ]);

    // Temporal's retry of the attempt (or a replay) finds the result: the effect is not run again.
    const retry = await runSettled(store, tool, call, { workspace: '/' }, { ...run, holder: 'w2' });
    expect(retry).toMatchObject({ kind: 'completed', result: 'done', replayed: true });
    expect(tool.runs).toBe(1);
  });

  it('asynchronous: an execution that ended unknown is written back IN_DOUBT with its intent, and a repeat is refused', async () => {
    const { recordStore, store } = await storeOn('async');
    await recordStore.holdReplication();
    const call = callFor('async-doubt');
    const tool = scriptedTool(async () => {
      await recordStore.failOverNow();
      throw new Error('connection reset after the request was sent');
    });
    const first = await runSettled(store, tool, call, { workspace: '/' }, run);
    expect(first).toMatchObject({ kind: 'in_doubt', generation: 1 });
    expect(await store.get(call.key)).toMatchObject({ state: 'IN_DOUBT', intent: { n: 1 } });
    const repeat = await runSettled(store, tool, call, { workspace: '/' }, { ...run, holder: 'w2' });
    expect(repeat.kind).toBe('in_doubt');
    expect(tool.runs).toBe(1);
  });

  it("asynchronous: claim and completion lost after the executor reported; a retry with the claim's heartbeat is refused, in doubt, and one without it runs again", async () => {
    const { recordStore, store } = await storeOn('async');
    const seen = events();
    await recordStore.holdReplication();
    const [withEvidence, without] = [callFor('async-heartbeat'), callFor('async-no-heartbeat')];
    const tool = scriptedTool(async () => 'done');
    const heartbeats: ClaimEvidence[] = [];
    const onHost = { ...run, host: 'host-a' };
    for (const call of [withEvidence, without]) {
      // Both attempts complete and report, on a primary whose standby received none of it.
      const first = await runSettled(store, tool, call, { workspace: '/' }, { ...onHost, onClaimed: (e) => heartbeats.push(e) });
      expect(first).toMatchObject({ kind: 'completed', replayed: false, generation: 1 });
    }
    expect(heartbeats).toEqual([
      { key: withEvidence.key, generation: 1, intent: { n: 1 } },
      { key: without.key, generation: 1, intent: { n: 1 } },
    ]);
    await recordStore.failOverNow();
    expect(await store.get(withEvidence.key)).toBeUndefined(); // forgotten: claim and completion

    // Temporal's retry of the first call carries the claim its attempt heartbeated.
    const retry = await runSettled(
      store,
      tool,
      withEvidence,
      { workspace: '/' },
      { ...onHost, holder: 'w2', earlierClaim: heartbeats[0]! },
    );
    expect(retry).toMatchObject({ kind: 'in_doubt', generation: 1 });
    expect(tool.runs).toBe(2); // the two first attempts only
    expect(await store.get(withEvidence.key)).toMatchObject({ state: 'IN_DOUBT', generation: 1, intent: { n: 1 }, host: 'host-a' });
    expect(seen).toContainEqual(expect.objectContaining({ event: 'in_doubt', cause: 'claim_forgotten', key: withEvidence.key }));
    expect(seen).toContainEqual(expect.objectContaining({ event: 'record_written_back', state: 'IN_DOUBT', key: withEvidence.key }));

    // Without that evidence (an attempt whose heartbeat never reached Temporal) nothing tells the
    // retry: it claims afresh and runs the effect again — why asynchronous replication is refused.
    const blind = await runSettled(store, tool, without, { workspace: '/' }, { ...onHost, holder: 'w2' });
    expect(blind).toMatchObject({ kind: 'completed', replayed: false });
    expect(tool.runs).toBe(3);
  });

  it('synchronous: the promoted standby has the claim; the completion lands on it as usual, nothing written back', async () => {
    const { recordStore, store } = await storeOn('sync');
    const seen = events();
    const call = callFor('sync');
    const tool = scriptedTool(async () => {
      await recordStore.failOver(200);
      return 'done';
    });
    const first = await runSettled(store, tool, call, { workspace: '/' }, run);
    expect(first).toEqual({ kind: 'completed', result: 'done', replayed: false, generation: 1 });
    expect(seen.filter((e) => e.event === 'record_written_back')).toEqual([]);
    expect((await store.events(call.key)).map((e) => [e.fromState, e.toState])).toEqual([
      ['UNSEEN', 'IN_FLIGHT'],
      ['IN_FLIGHT', 'IN_FLIGHT'], // the intent, recorded with the claim
      ['IN_FLIGHT', 'COMPLETED'],
    ]);
  });
});
