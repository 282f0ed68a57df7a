/**
 * Regression for the model checker's counterexample to P4 (docs/model-checking.md#found): an
 * operator's verdict must settle the generation the operator examined, never a later one that
 * went IN_DOUBT while the verdict was on its way. Real Postgres, the interleaving of the trail.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../core/key';
import type { ClaimRequest } from '../../activities/store/endpoint-store';
import { applyProbe } from '../../activities/settled/run-settled';
import { settleByOperator } from '../../activities/settled/operator-settlement';
import { openTestDb, testStore, uniqueId } from '../support/env';
import { onCall, signed, TEST_OPERATOR } from '../support/operator';

const db = openTestDb();
const store = testStore(db);
afterAll(() => db.destroy());

function newCall(): ClaimRequest {
  const trajectoryId = uniqueId('opgen');
  const args = { command: 'deploy --once' };
  return {
    key: deriveKey({ trajectoryId, turn: 0, callId: 'c1', tool: 'bash_execute', args }),
    trajectoryId,
    turn: 0,
    callId: 'c1',
    tool: 'bash_execute',
    args,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('operator verdicts are fenced by the generation the operator examined', () => {
  it('a verdict on generation 1 arriving after generation 2 went IN_DOUBT (with its effect done) is refused', async () => {
    const call = newCall();
    let effects = 0;

    // Generation 1: claimed, then its executor dies (never writes again); the lease lapses.
    const first = await store.claim(call, { leaseMs: 20, holder: 'A', intent: { command: 'deploy --once' } });
    expect(first).toMatchObject({ kind: 'claimed', generation: 1 });
    await sleep(60);
    const expired = await store.claim(call, { leaseMs: 20, holder: 'B' });
    expect(expired).toMatchObject({ kind: 'in_doubt', leaseExpiredNow: true });

    // The operator looks: generation 1 is IN_DOUBT, its executor is gone, no effect anywhere.
    const examined = (await store.get(call.key))!;
    expect(examined).toMatchObject({ state: 'IN_DOUBT', generation: 1 });
    const claim = { key: call.key, verdict: 'not_applied' as const, reason: 'no trace', generation: examined.generation };
    const verdict = {
      ...claim,
      credential: signed({ purpose: 'settle', namespace: 'default', trajectoryId: call.trajectoryId, ...claim }),
    };

    // Meanwhile a probe settles generation 1 NOT_EXECUTED, and the call runs again as generation 2:
    // its effect happens, then an exception leaves it IN_DOUBT.
    await applyProbe(store, examined, { verdict: 'not_applied', detail: 'before hash' });
    const second = await store.claim(call, { leaseMs: 30_000, holder: 'C', intent: { command: 'deploy --once' } });
    expect(second).toMatchObject({ kind: 'claimed', generation: 2 });
    effects++;
    expect((await store.markInDoubt(call.key, 2, 'exception after the effect', 'worker:C')).ok).toBe(true);

    // The operator's verdict about generation 1 arrives now.
    const outcome = await settleByOperator(store, verdict, { keys: onCall().keys, namespace: 'default' });
    expect(outcome).toEqual({ settled: false, state: 'IN_DOUBT', generation: 2 });
    const record = (await store.get(call.key))!;
    // Not NOT_EXECUTED: that would let the call run a second time although its effect happened.
    expect(record).toMatchObject({ state: 'IN_DOUBT', generation: 2 });
    expect(effects).toBe(1);
    const refused = (await store.events(call.key)).at(-1)!;
    expect(refused).toMatchObject({ generation: 1, actor: `operator:${TEST_OPERATOR}`, fromState: 'IN_DOUBT', toState: 'IN_DOUBT' });
  });

  it('a verdict on the generation that is IN_DOUBT settles it', async () => {
    const call = newCall();
    await store.claim(call, { leaseMs: 30_000, holder: 'A', intent: { command: 'deploy --once' } });
    await store.markInDoubt(call.key, 1, 'exception', 'worker:A');
    const claim = { key: call.key, verdict: 'applied' as const, reason: 'log shows it', generation: 1 };
    const credential = signed({ purpose: 'settle', namespace: 'default', trajectoryId: call.trajectoryId, ...claim });
    const outcome = await settleByOperator(store, { ...claim, credential }, { keys: onCall().keys, namespace: 'default' });
    expect(outcome).toEqual({ settled: true, state: 'COMPLETED', generation: 1 });
    expect(await store.get(call.key)).toMatchObject({ state: 'COMPLETED', settledBy: `operator:${TEST_OPERATOR}` });
  });

  it('a probe whose verdict lands after an operator settled the call reports the operator, not itself', async () => {
    const call = newCall();
    await store.claim(call, { leaseMs: 30_000, holder: 'A', intent: { command: 'deploy --once' } });
    await store.markInDoubt(call.key, 1, 'exception', 'worker:A');
    // The probe read the record while it was IN_DOUBT…
    const examined = (await store.get(call.key))!;
    // …and an operator settled it before the probe's verdict was written.
    const claim = { key: call.key, verdict: 'applied' as const, reason: 'log shows it', generation: 1 };
    const credential = signed({ purpose: 'settle', namespace: 'default', trajectoryId: call.trajectoryId, ...claim });
    await settleByOperator(store, { ...claim, credential }, { keys: onCall().keys, namespace: 'default' });

    const late = await applyProbe(store, examined, { verdict: 'applied', detail: 'marker found', result: { output: 'x' } });
    expect(late).toEqual({ state: 'COMPLETED', applied: false, settledBy: `operator:${TEST_OPERATOR}` });
    const own = newCall();
    await store.claim(own, { leaseMs: 30_000, holder: 'A', intent: { command: 'deploy --once' } });
    await store.markInDoubt(own.key, 1, 'exception', 'worker:A');
    const probed = await applyProbe(store, (await store.get(own.key))!, { verdict: 'not_applied', detail: 'no marker' });
    expect(probed).toEqual({ state: 'NOT_EXECUTED', applied: true, settledBy: 'probe:bash_execute' });
  });
});
