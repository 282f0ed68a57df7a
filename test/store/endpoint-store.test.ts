/**
 * The endpoint-record rules of docs/design.md#endpoint-records against real Postgres.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../core/key';
import type { ClaimRequest } from '../../activities/store/endpoint-store';
import { openTestDb, testStore, uniqueId } from '../support/env';

const db = openTestDb();
const store = testStore(db);
afterAll(() => db.destroy());

function newCall(): ClaimRequest {
  const trajectoryId = uniqueId('store');
  const args = { path: '/ws/a.txt', old_str: 'a', new_str: 'b' };
  return {
    key: deriveKey({ trajectoryId, turn: 0, callId: 'c1', tool: 'file_edit', args }),
    trajectoryId,
    turn: 0,
    callId: 'c1',
    tool: 'file_edit',
    args,
  };
}

const opts = (holder = 'w1', leaseMs = 30_000) => ({ leaseMs, holder });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('claim', () => {
  it('64 concurrent claims of one key on separate connections: exactly one claims, the rest see busy', async () => {
    const call = newCall();
    const stores = Array.from({ length: 64 }, () => {
      const d = openTestDb(1);
      return { d, s: testStore(d) };
    });
    try {
      // Open every connection first, so the claims really race.
      await Promise.all(stores.map(({ s }) => s.get(call.key)));
      const results = await Promise.all(stores.map(({ s }, i) => s.claim(call, opts(`w${i}`))));
      expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.kind === 'busy')).toHaveLength(63);
    } finally {
      await Promise.all(stores.map(({ d }) => d.destroy()));
    }
    const events = await store.events(call.key);
    expect(events.map((e) => `${e.fromState}->${e.toState}`)).toEqual(['UNSEEN->IN_FLIGHT']);
  });

  it('replays a completed call without claiming it again', async () => {
    const call = newCall();
    const claim = await store.claim(call, opts());
    expect(claim).toMatchObject({ kind: 'claimed', generation: 1, from: 'UNSEEN' });
    expect((await store.complete(call.key, 1, { output: 'done' }, 'worker:w1')).ok).toBe(true);
    const again = await store.claim(call, opts('w2'));
    expect(again.kind).toBe('completed');
    if (again.kind === 'completed') expect(again.record.result).toEqual({ output: 'done' });
  });

  it('compares leases on the database clock and turns an expired lease IN_DOUBT atomically', async () => {
    const call = newCall();
    await store.claim(call, opts('w1', 150));
    expect((await store.claim(call, opts('w2'))).kind).toBe('busy');
    await sleep(300);
    const expired = await store.claim(call, opts('w2'));
    expect(expired).toMatchObject({ kind: 'in_doubt', leaseExpiredNow: true });
    const record = await store.get(call.key);
    expect(record).toMatchObject({ state: 'IN_DOUBT', generation: 1, leaseUntil: null });
    // The next claim reports the doubt; it does not execute.
    expect(await store.claim(call, opts('w3'))).toMatchObject({ kind: 'in_doubt', leaseExpiredNow: false });
    const events = await store.events(call.key);
    expect(events.at(-1)).toMatchObject({ fromState: 'IN_FLIGHT', toState: 'IN_DOUBT', actor: 'lease-expiry' });
  });

  it('rejects a lease that is not a positive integer', async () => {
    await expect(store.claim(newCall(), opts('w', 0))).rejects.toThrow(/leaseMs: must be an integer ≥ 1/);
  });
});

describe('fencing', () => {
  it('the executor of an IN_DOUBT generation that proves it never acted settles it NOT_EXECUTED (late release); others cannot', async () => {
    const call = newCall();
    await store.claim(call, opts('paused', 100));
    await sleep(250);
    expect((await store.claim(call, opts('w2'))).kind).toBe('in_doubt'); // the lease lapsed while it was paused
    // A release naming another generation changes nothing.
    expect((await store.releaseNoEffect(call.key, 2, 'x', 'worker:other')).ok).toBe(false);
    const late = await store.releaseNoEffect(call.key, 1, 'LeaseLost: not starting the effect', 'worker:paused');
    expect(late).toMatchObject({ ok: true, record: { state: 'NOT_EXECUTED', generation: 1, settledBy: 'worker:paused' } });
    expect((await store.events(call.key)).at(-1)).toMatchObject({ fromState: 'IN_DOUBT', toState: 'NOT_EXECUTED', actor: 'worker:paused' });
    expect(await store.claim(call, opts('w2'))).toMatchObject({ kind: 'claimed', generation: 2 });
  });

  it('a late executor (lease expired → IN_DOUBT → NOT_EXECUTED → claimed again) cannot complete with its old generation', async () => {
    const call = newCall();
    const first = await store.claim(call, opts('zombie', 100));
    expect(first).toMatchObject({ kind: 'claimed', generation: 1 });
    await sleep(250);
    expect((await store.claim(call, opts('w2'))).kind).toBe('in_doubt');
    expect((await store.settle(call.key, 1, { as: 'NOT_EXECUTED' }, 'probe:file_edit', 'hash = before')).ok).toBe(true);
    const second = await store.claim(call, opts('w2'));
    expect(second).toMatchObject({ kind: 'claimed', generation: 2, from: 'NOT_EXECUTED' });

    // The zombie wakes up and tries every write it might attempt.
    const late = await store.complete(call.key, 1, { output: 'zombie' }, 'worker:zombie');
    expect(late).toEqual({ ok: false, current: { state: 'IN_FLIGHT', generation: 2, settledBy: null } });
    expect((await store.renewLease(call.key, 1, 30_000)).ok).toBe(false);
    expect((await store.recordIntent(call.key, 1, { x: 1 }, 'worker:zombie')).ok).toBe(false);
    expect((await store.markInDoubt(call.key, 1, 'x', 'worker:zombie')).ok).toBe(false);
    expect((await store.releaseNoEffect(call.key, 1, 'x', 'worker:zombie')).ok).toBe(false);

    // The live executor is unaffected and completes.
    expect((await store.complete(call.key, 2, { output: 'real' }, 'worker:w2')).ok).toBe(true);
    const record = await store.get(call.key);
    expect(record).toMatchObject({ state: 'COMPLETED', generation: 2, result: { output: 'real' } });

    // Refused writes are in the trail for operators.
    const refused = (await store.events(call.key)).filter((e) => (e.detail as { refused?: string } | null)?.refused);
    expect(refused.map((e) => e.actor)).toEqual(Array(4).fill('worker:zombie'));
  });

  it('a late completion with the same generation settles IN_DOUBT as COMPLETED', async () => {
    const call = newCall();
    await store.claim(call, opts('slow', 100));
    await sleep(250);
    expect((await store.claim(call, opts('w2'))).kind).toBe('in_doubt');
    const late = await store.complete(call.key, 1, { output: 'it did happen' }, 'worker:slow');
    expect(late.ok).toBe(true);
    expect(await store.get(call.key)).toMatchObject({
      state: 'COMPLETED',
      settledBy: 'worker:slow',
      settleReason: 'late completion by the executor of this generation',
      result: { output: 'it did happen' },
    });
  });

  it('settlement needs the generation it read and only moves IN_DOUBT', async () => {
    const call = newCall();
    await store.claim(call, opts());
    expect(await store.settle(call.key, 1, { as: 'NOT_EXECUTED' }, 'operator:ann', 'no')).toMatchObject({ ok: false });
    await store.markInDoubt(call.key, 1, 'crashed', 'worker:w1');
    expect((await store.settle(call.key, 2, { as: 'NOT_EXECUTED' }, 'operator:ann', 'wrong gen')).ok).toBe(false);
    const settled = await store.settle(
      call.key,
      1,
      { as: 'COMPLETED', result: { output: 'checked by hand' } },
      'operator:ann',
      'saw the file',
    );
    expect(settled.ok).toBe(true);
    expect(await store.get(call.key)).toMatchObject({ state: 'COMPLETED', settledBy: 'operator:ann', settleReason: 'saw the file' });
  });

  it('intent can only be recorded while the lease holds on the database clock', async () => {
    const call = newCall();
    await store.claim(call, opts('w1', 100));
    await sleep(200);
    expect((await store.recordIntent(call.key, 1, { before: 'x' }, 'worker:w1')).ok).toBe(false);
  });
});

describe('audit trail and retention', () => {
  it('every transition leaves exactly one event row, in order, with its actor', async () => {
    const call = newCall();
    await store.claim(call, opts('w1'));
    await store.recordIntent(call.key, 1, { sha: 'before' }, 'worker:w1');
    await store.markInDoubt(call.key, 1, 'boom', 'worker:w1');
    await store.settle(call.key, 1, { as: 'NOT_EXECUTED' }, 'probe:file_edit', 'hash = before');
    await store.claim(call, opts('w2'));
    await store.releaseNoEffect(call.key, 2, 'precondition failed', 'worker:w2');
    await store.claim(call, opts('w3'));
    await store.complete(call.key, 3, { ok: true }, 'worker:w3');

    const events = await store.events(call.key);
    expect(events.map((e) => [e.generation, e.fromState, e.toState, e.actor])).toEqual([
      [1, 'UNSEEN', 'IN_FLIGHT', 'worker:w1'],
      [1, 'IN_FLIGHT', 'IN_FLIGHT', 'worker:w1'],
      [1, 'IN_FLIGHT', 'IN_DOUBT', 'worker:w1'],
      [1, 'IN_DOUBT', 'NOT_EXECUTED', 'probe:file_edit'],
      [2, 'NOT_EXECUTED', 'IN_FLIGHT', 'worker:w2'],
      [2, 'IN_FLIGHT', 'NOT_EXECUTED', 'worker:w2'],
      [3, 'NOT_EXECUTED', 'IN_FLIGHT', 'worker:w3'],
      [3, 'IN_FLIGHT', 'COMPLETED', 'worker:w3'],
    ]);
  });

  it('retention purges settled records but never IN_DOUBT or IN_FLIGHT', async () => {
    const doubt = newCall();
    const flight = newCall();
    const done = newCall();
    await store.claim(doubt, opts());
    await store.markInDoubt(doubt.key, 1, 'crash', 'worker:w1');
    await store.claim(flight, opts());
    await store.claim(done, opts());
    await store.complete(done.key, 1, { ok: 1 }, 'worker:w1');
    await sleep(20);

    // Scoped to this test's rows: other files share the database and run in parallel.
    const purged = await store.purgeSettled(0, { trajectoryIds: [doubt, flight, done].map((c) => c.trajectoryId) });
    expect(purged).toBe(1);
    expect(await store.get(done.key)).toBeUndefined();
    expect(await store.events(done.key)).toEqual([]);
    expect((await store.get(doubt.key))?.state).toBe('IN_DOUBT');
    expect((await store.get(flight.key))?.state).toBe('IN_FLIGHT');
    expect((await store.events(doubt.key)).length).toBe(2);
  });

  it('lists by state and trajectory', async () => {
    const a = newCall();
    await store.claim(a, opts());
    await store.markInDoubt(a.key, 1, 'crash', 'worker:w1');
    const inDoubt = await store.list({ state: 'IN_DOUBT', trajectoryId: a.trajectoryId });
    expect(inDoubt.map((r) => r.key)).toEqual([a.key]);
    expect(await store.list({ state: 'COMPLETED', trajectoryId: a.trajectoryId })).toEqual([]);
  });
});
