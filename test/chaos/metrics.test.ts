/**
 * The chaos suite's figures from recorded trails: what counts as a call caught by a fault, when
 * it counts as recovered, and which seconds count as running for the renewal rate.
 */
import { describe, expect, it } from 'vitest';
import type { EndpointEvent } from '../../activities/store/endpoint-store';
import type { Fault } from '../../chaos/harness/cluster';
import { recoveries, renewalRate, type CallTrail } from '../../chaos/harness/metrics';

const T0 = Date.parse('2026-12-01T00:00:00Z');
const W1 = 'settle-worker@host:101';
const W2 = 'settle-worker@host:202';

function event(ms: number, generation: number, from: string, to: string, actor: string, detail: unknown = null): EndpointEvent {
  return { id: String(ms), key: 'k', generation, fromState: from, toState: to, actor, detail, at: new Date(T0 + ms) };
}

const claim = (ms: number, generation: number, holder: string, from = 'UNSEEN') =>
  event(ms, generation, from, 'IN_FLIGHT', `worker:${holder}`, { holder });

function trail(key: string, events: EndpointEvent[], state = events.at(-1)!.toState): CallTrail {
  return { key, tool: 'file_edit', state, events: events.map((e) => ({ ...e, key })) };
}

const kill = (ms: number, identity: string): Fault => ({ kind: 'sigkill', at: T0 + ms, until: T0 + ms, identity });

describe('chaos metrics', () => {
  it('recovery runs from the fault to the caught generation settled again, by whoever settled it', () => {
    const caught = trail('a', [
      claim(0, 1, `${W1}#1@1`),
      event(4_000, 1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'),
      event(4_100, 1, 'IN_DOUBT', 'NOT_EXECUTED', 'probe:file_edit'),
      claim(4_500, 2, `${W2}#1@2`, 'NOT_EXECUTED'),
      event(4_600, 2, 'IN_FLIGHT', 'COMPLETED', `worker:${W2}#1@2`),
    ]);
    const otherWorker = trail('b', [claim(500, 1, `${W2}#2@1`), event(1_500, 1, 'IN_FLIGHT', 'COMPLETED', `worker:${W2}#2@1`)]);
    const unsettled = trail('c', [claim(900, 1, `${W1}#3@1`), event(5_000, 1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry')]);
    const found = recoveries([kill(1_000, W1)], [caught, otherWorker, unsettled]);
    // Not until the re-execution completed (4.6 s): the record was settled at 4.1 s, by the probe.
    expect(found.map((r) => ({ key: r.key, ms: r.ms, by: r.by }))).toEqual([{ key: 'a', ms: 3_100, by: 'probe' }]);
    expect(found.unsettled).toBe(1);
  });

  it("a host's death catches the calls of each of its workers, and only theirs", () => {
    const W3 = 'settle-worker@host:303';
    const settledAt = (key: string, holder: string) =>
      trail(key, [
        claim(0, 1, holder),
        event(8_000, 1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry'),
        event(9_000, 1, 'IN_DOUBT', 'COMPLETED', 'probe:file_edit'),
      ]);
    const death: Fault = { kind: 'host-death', at: T0 + 1_000, until: T0 + 7_000, host: 'host-a', identities: [W1, W2] };
    const found = recoveries([death], [settledAt('a', `${W1}#1@1`), settledAt('b', `${W2}#2@1`), settledAt('c', `${W3}#3@1`)]);
    expect(found.map((r) => ({ key: r.key, fault: r.fault, ms: r.ms }))).toEqual([
      { key: 'a', fault: 'host-death', ms: 8_000 },
      { key: 'b', fault: 'host-death', ms: 8_000 },
    ]);
    // Its workers renewed nothing once the host was dead.
    expect(renewalRate(0, [settledAt('a', `${W1}#1@1`)], [death]).runningSeconds).toBeCloseTo(1);
  });

  it('a call runs from its claim until it is settled or its holder dies, whichever is first', () => {
    const trails = [
      // Completed by its executor after 2.5 s.
      trail('a', [claim(0, 1, `${W2}#1@1`), event(2_500, 1, 'IN_FLIGHT', 'COMPLETED', `worker:${W2}#1@1`)]),
      // Its holder was killed 1 s in: the 3 s until the lease expired renewed nothing.
      trail('b', [claim(10_000, 1, `${W1}#2@1`), event(14_000, 1, 'IN_FLIGHT', 'IN_DOUBT', 'lease-expiry')]),
    ];
    const rate = renewalRate(3, trails, [kill(11_000, W1)]);
    expect(rate.runningSeconds).toBeCloseTo(3.5);
    expect(rate.perSecond).toBeCloseTo(3 / 3.5);
    expect(renewalRate(0, [], []).perSecond).toBeNull();
  });
});
