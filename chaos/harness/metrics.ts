/**
 * Recovery times from the faults the cluster recorded and the endpoint records' event trails.
 *
 * A call is *caught* by a fault when its record was IN_FLIGHT at the fault's instant under a claim
 * of that generation — held by the victim, for a worker fault (SIGKILL, zombie, failpoint kill;
 * for a host's death, any of its workers); by anyone, for an infrastructure fault (PostgreSQL,
 * Temporal). Its *recovery* is the time from
 * the fault to the first transition of that same generation into COMPLETED or NOT_EXECUTED: the
 * moment settle's record says again, as a settled fact, whether the effect happened — by the
 * executor itself (`worker`, e.g. once PostgreSQL is back), by a probe reading the facts
 * (`probe`, on the next attempt's claim or the workflow's settle step) or by a person
 * (`operator`). It is not the time until the call was executed again after a NOT_EXECUTED.
 * Caught calls whose generation was never settled by the end of the run are counted apart.
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

export function recoveries(faults: Fault[], trails: CallTrail[]): Recovery[] & { unsettled: number } {
  const out = Object.assign([] as Recovery[], { unsettled: 0 });
  for (const fault of faults) {
    for (const trail of trails) {
      const claim = inFlightClaimAt(trail.events, fault.at);
      if (!claim) continue;
      // A worker fault catches only the calls that worker held (a host's death, its workers'); an infrastructure fault catches all.
      const holder = (claim.detail as { holder?: string } | null)?.holder ?? '';
      if (!heldBy(fault, holder)) continue;
      const settled = trail.events.find(
        (e) => e.generation === claim.generation && e.at.getTime() >= fault.at && SETTLED.has(e.toState) && e.fromState !== e.toState,
      );
      if (!settled) {
        out.unsettled++;
        continue;
      }
      out.push({
        key: trail.key,
        tool: trail.tool,
        fault: fault.kind,
        ms: settled.at.getTime() - fault.at,
        by: settled.actor.split(':')[0]!,
      });
      out.at(-1)!.trail = [`fault ${fault.kind} at ${new Date(fault.at).toISOString().slice(11, 23)}`, ...trailLines(trail)];
    }
  }
  return out;
}

/** A record's event trail, one line per event: time, generation, transition, actor, and the event's reason if it gives one. */
export function trailLines(trail: CallTrail): string[] {
  return trail.events.map((e) => {
    const detail = e.detail as { detail?: unknown; reason?: unknown } | null;
    const why = detail?.detail ?? detail?.reason;
    const line = `${e.at.toISOString().slice(11, 23)} g${e.generation} ${e.fromState}→${e.toState} ${e.actor}`;
    return typeof why === 'string' ? `${line}: ${why.slice(0, 160)}` : line;
  });
}

/** Whether `fault` caught a claim of `holder`: its victim's (or victims'), or anyone's for an infrastructure fault. */
function heldBy(fault: Fault, holder: string): boolean {
  const victims = fault.identities ?? (fault.identity ? [fault.identity] : null);
  return victims === null || victims.some((identity) => holder.startsWith(`${identity}#`));
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
 * Lease renewals per second of running call.
 *
 * `renewals` is exact: the executions of the renewal statement (EndpointStore.renewLease), counted
 * by PostgreSQL's pg_stat_statements — refused renewals included, each is a statement the database
 * served. Running call-seconds come from the records' trails: a generation runs from its claim to
 * its first transition out of IN_FLIGHT, or until its holder was killed or paused (a dead or
 * stopped executor renews nothing; counting the rest of its lease would flatter the rate).
 * By design (activities/settled/run-settled.ts, LeaseKeeper) an executor renews every lease/3 —
 * once a second with the default 3 s lease — so the rate stays at or under 1.
 */
export function renewalRate(
  renewals: number,
  trails: CallTrail[],
  faults: Fault[] = [],
): { renewals: number; runningSeconds: number; perSecond: number | null } {
  let runningMs = 0;
  for (const { events } of trails) {
    let claim: { at: number; generation: number; holder: string } | null = null;
    for (const e of events) {
      const refused = (e.detail as { refused?: unknown } | null)?.refused !== undefined;
      if (refused) continue;
      if (e.toState === 'IN_FLIGHT' && e.fromState !== 'IN_FLIGHT') {
        claim = { at: e.at.getTime(), generation: e.generation, holder: (e.detail as { holder?: string } | null)?.holder ?? '' };
      } else if (claim && e.generation === claim.generation && e.toState !== 'IN_FLIGHT') {
        const start = claim.at;
        const holderFault = faults.find(
          (f) => (f.identity || f.identities) && heldBy(f, claim!.holder) && f.at > start && f.at < e.at.getTime(),
        );
        runningMs += (holderFault ? holderFault.at : e.at.getTime()) - start;
        claim = null;
      }
    }
  }
  const runningSeconds = runningMs / 1000;
  return { renewals, runningSeconds, perSecond: runningSeconds > 0 ? renewals / runningSeconds : null };
}

export interface Stats {
  n: number;
  p50Ms: number | null;
  maxMs: number | null;
}

/** A scenario's recovery of the calls its faults caught (ScenarioResult's `recovery`). */
export interface RecoveryFigures {
  probeable: Stats;
  all: Stats;
  unsettled: number;
  slowest: Recovery[];
}

/**
 * A call settle settled by itself after a fault — its executor, or a probe from the facts (a file
 * edit's file hash, a shell command's run markers) — rather than an operator.
 */
export function probeable(r: Recovery): boolean {
  return r.by !== 'operator';
}

/** A scenario's recovery figures: settled by settle itself, all, unsettled, and the five slowest. */
export function recoveryFigures(recovered: Recovery[] & { unsettled: number }): RecoveryFigures {
  return {
    probeable: stats(recovered.filter(probeable)),
    all: stats(recovered),
    unsettled: recovered.unsettled,
    slowest: [...recovered].sort((a, b) => b.ms - a.ms).slice(0, 5),
  };
}

/** Lease renewals per running call-second, and what they were computed from (null: not measured). */
export function renewalFigures(rate: ReturnType<typeof renewalRate> | null) {
  return {
    renewalsPerRunningCallSecond: rate?.perSecond ?? null,
    renewals: rate ? { statements: rate.renewals, runningCallSeconds: Math.round(rate.runningSeconds * 10) / 10 } : null,
  };
}

export function stats(recovered: readonly { ms: number }[]): Stats {
  const ms = recovered.map((r) => r.ms);
  return { n: ms.length, p50Ms: percentile(ms, 50), maxMs: ms.length ? Math.max(...ms) : null };
}
