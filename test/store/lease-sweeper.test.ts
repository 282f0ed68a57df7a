/**
 * The lease sweeper against real Postgres (docs/design.md#fencing-and-leases): a record whose
 * lease lapsed turns IN_DOUBT without any new claim, exactly as a claim would turn it, fenced the
 * same way, and each record by one sweeper only.
 *
 * Sweeps here leave every lease that lapsed less than a second ago alone: other test files (sharing
 * the database) rely on their own claims finding a lease they let lapse a moment ago.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../core/key';
import type { ClaimRequest } from '../../activities/store/endpoint-store';
import { LeaseSweeper } from '../../activities/settled/lease-sweeper';
import { LAPSED_DETAIL } from '../../activities/store/statements';
import { onCallEvent, type CallEvent } from '../../activities/observability/events';
import { openTestDb, testStore, uniqueId } from '../support/env';

const db = openTestDb();
const store = testStore(db);
afterAll(() => db.destroy());

const GRACE_MS = 1_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function newCall(): ClaimRequest {
  const trajectoryId = uniqueId('sweep');
  const args = { command: 'deploy' };
  return {
    key: deriveKey({ trajectoryId, turn: 0, callId: 'c1', tool: 'bash_execute', args }),
    trajectoryId,
    turn: 0,
    callId: 'c1',
    tool: 'bash_execute',
    args,
  };
}

/** A claim whose holder dies at once: its lease lapses after `leaseMs` and is never renewed. */
async function claimedByTheDead(leaseMs = 20): Promise<ClaimRequest> {
  const call = newCall();
  expect(await store.claim(call, { leaseMs, holder: 'dead', intent: { command: 'deploy' } })).toMatchObject({
    kind: 'claimed',
    generation: 1,
  });
  return call;
}

describe('lease sweeper', () => {
  it('turns a lapsed lease nobody claims again IN_DOUBT, with the lease-expiry event; leaves live and just-lapsed leases alone', async () => {
    const dead = await claimedByTheDead();
    const live = newCall();
    await store.claim(live, { leaseMs: 60_000, holder: 'alive' });
    await sleep(GRACE_MS + 200);
    const justLapsed = await claimedByTheDead(1);
    await sleep(20);
    const events: CallEvent[] = [];
    const stop = onCallEvent((e) => events.push(e));
    try {
      await new LeaseSweeper(store, { identity: 'sweeper-test', graceMs: GRACE_MS }).sweepOnce();
    } finally {
      stop();
    }

    expect(await store.get(dead.key)).toMatchObject({
      state: 'IN_DOUBT',
      generation: 1,
      leaseUntil: null,
      holder: null,
      detail: LAPSED_DETAIL,
    });
    expect((await store.events(dead.key)).map((e) => [e.generation, e.fromState, e.toState, e.actor])).toEqual([
      [1, 'UNSEEN', 'IN_FLIGHT', 'worker:dead'],
      [1, 'IN_FLIGHT', 'IN_FLIGHT', 'worker:dead'], // intent
      [1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'],
    ]);
    expect((await store.events(dead.key)).at(-1)!.detail).toEqual({ holder: 'dead', sweeper: 'sweeper-test' });
    // Counted and logged like a claim that found the lease lapsed.
    expect(events.find((e) => e.event === 'in_doubt' && e.key === dead.key)).toMatchObject({
      cause: 'lease_expired',
      generation: 1,
      trajectoryId: dead.trajectoryId,
      callId: 'c1',
      tool: 'bash_execute',
    });
    expect(await store.get(live.key)).toMatchObject({ state: 'IN_FLIGHT', holder: 'alive' });
    expect(await store.get(justLapsed.key)).toMatchObject({ state: 'IN_FLIGHT', holder: 'dead' });
  });

  it('is fenced as the claim is: renewals are refused, the next claim reports the doubt, only that generation settles it late', async () => {
    const call = await claimedByTheDead();
    await sleep(GRACE_MS + 200);
    await store.sweepLapsedLeases({ graceMs: GRACE_MS, limit: 100, sweeper: 's' });
    expect((await store.get(call.key))?.state).toBe('IN_DOUBT');

    expect(await store.renewLease(call.key, 1, 30_000)).toEqual({
      ok: false,
      current: { state: 'IN_DOUBT', generation: 1, settledBy: null },
    });
    expect(await store.claim(call, { leaseMs: 30_000, holder: 'next' })).toMatchObject({ kind: 'in_doubt', leaseExpiredNow: false });
    expect((await store.complete(call.key, 2, 'forged', 'worker:other')).ok).toBe(false);
    // The executor of generation 1 was only paused: its late completion carries real knowledge.
    expect((await store.complete(call.key, 1, 'done', 'worker:dead')).ok).toBe(true);
    expect(await store.get(call.key)).toMatchObject({
      state: 'COMPLETED',
      result: 'done',
      settledBy: 'worker:dead',
      settleReason: 'late completion by the executor of this generation',
    });
  });

  it('a renewal that commits first keeps the record; many sweepers at once sweep a record once', async () => {
    const renewed = await claimedByTheDead();
    const call = await claimedByTheDead();
    await sleep(GRACE_MS + 200);
    expect((await store.renewLease(renewed.key, 1, 60_000)).ok).toBe(true);

    await Promise.all(Array.from({ length: 8 }, (_, i) => store.sweepLapsedLeases({ graceMs: GRACE_MS, limit: 100, sweeper: `s${i}` })));
    expect((await store.get(renewed.key))?.state).toBe('IN_FLIGHT');
    expect(await store.get(call.key)).toMatchObject({ state: 'IN_DOUBT', generation: 1 });
    expect((await store.events(call.key)).filter((e) => e.actor === 'lease-expiry')).toHaveLength(1);
  });

  it('started, sweeps every period until stopped', async () => {
    const sweeper = new LeaseSweeper(store, { identity: 'periodic', intervalMs: 100, graceMs: GRACE_MS }).start();
    try {
      const call = await claimedByTheDead();
      const deadline = Date.now() + 10_000;
      while ((await store.get(call.key))?.state !== 'IN_DOUBT') {
        if (Date.now() > deadline) throw new Error('the running sweeper did not turn the lapsed lease IN_DOUBT');
        await sleep(50);
      }
    } finally {
      await sweeper.stop();
    }
    const after = await claimedByTheDead();
    await sleep(GRACE_MS + 400);
    expect((await store.get(after.key))?.state).toBe('IN_FLIGHT');
  });

  it('rejects bounds that are not integers in range, naming them', () => {
    expect(() => new LeaseSweeper(store, { identity: 'x', intervalMs: 0 })).toThrow(/intervalMs: must be an integer ≥ 1 \(got 0\)/);
    expect(() => new LeaseSweeper(store, { identity: 'x', graceMs: -1 })).toThrow(/graceMs: must be an integer ≥ 0 \(got -1\)/);
  });
});
