/**
 * Recovery times from the faults the cluster recorded and the endpoint records' event trails:
 * for every call a fault caught in flight, the time from the fault to the moment its record was
 * settled again (COMPLETED or NOT_EXECUTED, by whoever: the executor, a probe, an operator).
 */
import type { EndpointEvent } from '../../activities/store/endpoint-store';
import type { Fault } from './cluster';

export interface Recovery {
  key: string;
  tool: string;
  fault: Fault['kind'];
  ms: number;
  /** Who settled it: `worker`, `probe`, `operator`. */
  by: string;
  /** The record's event trail, one line per event (for the slowest ones in the results). */
  trail?: string[];
}

export interface CallTrail {
  key: string;
  tool: string;
  /** The record's state at the end of the run. */
  state: string;
  events: EndpointEvent[];
}

const SETTLED = new Set(['COMPLETED', 'NOT_EXECUTED']);

export function recoveries(faults: Fault[], trails: CallTrail[]): Recovery[] {
  const out: Recovery[] = [];
  for (const fault of faults) {
    for (const trail of trails) {
      const claim = inFlightClaimAt(trail.events, fault.at);
      if (!claim) continue;
      // A worker fault catches only the calls that worker held; an infrastructure fault catches all.
      const holder = (claim.detail as { holder?: string } | null)?.holder ?? '';
      if (fault.identity && !holder.startsWith(`${fault.identity}#`)) continue;
      const settled = trail.events.find(
        (e) => e.generation === claim.generation && e.at.getTime() >= fault.at && SETTLED.has(e.toState) && e.fromState !== e.toState,
      );
      if (!settled) continue;
      out.push({
        key: trail.key,
        tool: trail.tool,
        fault: fault.kind,
        ms: settled.at.getTime() - fault.at,
        by: settled.actor.split(':')[0]!,
      });
      out.at(-1)!.trail = [
        `fault ${fault.kind} at ${new Date(fault.at).toISOString().slice(11, 23)}`,
        ...trail.events.map((e) => `${e.at.toISOString().slice(11, 23)} g${e.generation} ${e.fromState}→${e.toState} ${e.actor}`),
      ];
    }
  }
  return out;
}

/** The claim of the generation that was IN_FLIGHT at `at`, if one was. */
function inFlightClaimAt(events: EndpointEvent[], at: number): EndpointEvent | null {
  let claim: EndpointEvent | null = null;
  for (const e of events) {
    if (e.at.getTime() > at) break;
    if (e.toState === 'IN_FLIGHT' && e.fromState !== 'IN_FLIGHT') claim = e;
    else if (claim && e.generation === claim.generation && e.fromState !== e.toState && e.toState !== 'IN_FLIGHT') claim = null;
  }
  return claim;
}

export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * Lease renewals per second of running call: renewals are the record updates that are not
 * transitions (they leave no event), and a call runs from its claim to its first transition out
 * of IN_FLIGHT.
 */
export function renewalRate(
  recordUpdates: number,
  trails: CallTrail[],
): { renewals: number; runningSeconds: number; perSecond: number | null } {
  let transitions = 0;
  let runningMs = 0;
  for (const { events } of trails) {
    let claimedAt: number | null = null;
    for (const e of events) {
      const refused = (e.detail as { refused?: unknown } | null)?.refused !== undefined;
      if (!refused && e.fromState !== 'UNSEEN') transitions++; // every stored change but an insert is an UPDATE
      if (e.toState === 'IN_FLIGHT' && e.fromState !== 'IN_FLIGHT') claimedAt = e.at.getTime();
      else if (claimedAt !== null && e.toState !== 'IN_FLIGHT' && !refused) {
        runningMs += e.at.getTime() - claimedAt;
        claimedAt = null;
      }
    }
  }
  const renewals = Math.max(0, recordUpdates - transitions);
  const runningSeconds = runningMs / 1000;
  return { renewals, runningSeconds, perSecond: runningSeconds > 0 ? renewals / runningSeconds : null };
}
