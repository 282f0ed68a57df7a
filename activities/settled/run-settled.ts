/**
 * One attempt at one logical call, settled through its endpoint record:
 *
 *   plan (read-only) → claim + record intent (one statement) → execute (renewing the lease) → complete
 *
 * and the outcome the workflow acts on. Independent of Temporal: the activity passes a
 * `heartbeat` callback, tests can drive it directly against Postgres.
 */
import type { Actor, CallOutcome, ProbeVerdict } from '../../core/records';
import type { ClaimRequest, ClaimResult, EndpointRecord, EndpointStore, FencedWrite, WriteBack } from '../store/endpoint-store';
import { isTransientDatabaseError } from '../store/database';
import { failpoint } from '../failpoints';
import { emitCallEvent, type CallRef } from '../observability/events';
import { LeaseLost, NoEffect, type Plan, type SettledTool, type ToolEnv } from './settled-tool';
import { errorMessage } from '../../core/errors';

export interface RunOptions {
  /** Lease on the database clock, renewed every `leaseMs / 3`. */
  leaseMs: number;
  /** Identity shown on the record and its events (worker identity + attempt). */
  holder: string;
  /** Extra facts for the claim event (e.g. an A3 call's approval). */
  claimDetail?: Record<string, unknown>;
  /**
   * Tells Temporal this executor is alive (the activity heartbeats here): after each successful
   * lease renewal, after a renewal that failed only because the database was unreachable, and
   * while a result waits for the database to be recorded.
   */
  heartbeat?: () => void;
  /** Called when a write that must not be lost waits for the database (for the worker's log). */
  onDatabaseRetry?: (what: string, err: Error) => void;
  /**
   * Safety margin for the local lease check: the effect may start only if the last successful
   * renewal was sent less than `leaseMs - marginMs` ago on this process's monotonic clock.
   */
  marginMs?: number;
  /** Count the call as a valid proposal (settle_tool_calls) in the claim statement. */
  countProposal?: boolean;
  /** Temporal retried this attempt (the previous one never reported): see PrepareContext. */
  retried?: boolean;
  /**
   * Answer `busy` at once when another holder's lease is live, rather than wait for it to lapse.
   * A local attempt does: it holds its workflow task, which must not wait out a dead holder's lease
   * (the workflow continues the call in the activity lane, which waits there).
   */
  busyAtOnce?: boolean;
  /**
   * For a tool whose effect lives in a workspace: this worker's host (core/hosts.ts), recorded on
   * the claim. A record another host claimed is neither run again nor probed here.
   */
  host?: string;
  /**
   * What an earlier attempt of this call reported before it ended (its heartbeat): it claimed
   * this generation with this intent. A record store that no longer has that claim lost it in a
   * failover; claiming afresh would run the effect a second time, so the record is written back
   * IN_DOUBT with that intent instead, for the probe to settle from the facts.
   */
  earlierClaim?: ClaimEvidence;
  /** Called once a claim is won, before the effect: the activity heartbeats it, for its own retry. */
  onClaimed?: (evidence: ClaimEvidence) => void;
}

/** An attempt's claim, as its heartbeat carries it to the next attempt (RunOptions.earlierClaim). */
export interface ClaimEvidence {
  key: string;
  generation: number;
  intent: unknown;
}

/** The call's workspace is on another host (the record names it): nothing was claimed or touched here. */
export class RunsElsewhere extends Error {
  override readonly name = 'RunsElsewhere';
  constructor(readonly host: string) {
    super(`its record names host ${host}`);
  }
}

export async function runSettled<Args, Intent, Result>(
  store: EndpointStore,
  tool: SettledTool<Args, Intent, Result>,
  call: ClaimRequest & { args: Args },
  env: ToolEnv,
  options: RunOptions,
): Promise<CallOutcome<Result>> {
  const actor: Actor = `worker:${options.holder}`;
  if (options.earlierClaim?.key === call.key) {
    const forgotten = await inDoubtIfForgotten(store, call, options.earlierClaim, options.host, actor);
    if (forgotten) return forgotten;
  }
  // Plan first: it is read-only, so running it before the claim changes nothing, and a plan that
  // proceeds lets the claim record the intent in the same statement (one commit, not two). The
  // tool re-checks the planned pre-state right before its effect (SettledTool.plan).
  let plan: Plan<Intent, Result> | { kind: 'failed'; detail: string };
  try {
    plan = await tool.plan(call.args, env, { key: call.key });
  } catch (err) {
    // Planning is read-only: whatever went wrong, nothing was touched.
    plan = { kind: 'failed', detail: `planning failed before any effect: ${errorMessage(err)}` };
  }
  await failpoint('settled.before_intent');
  // What has no effect starts now and overlaps the claim's commit (SettledTool.prepare); it is
  // applied only if the claim is won, and discarded on every other path, a thrown claim included.
  const preparing =
    plan.kind === 'proceed' && tool.prepare
      ? settle(tool.prepare(call.args, plan.intent, env, { key: call.key, retried: options.retried ?? false }))
      : null;
  const discard = async () => {
    const prepared = await preparing;
    if (prepared?.ok) await prepared.value.discard().catch(() => undefined);
  };
  let claimSentAt = performance.now();
  const claimOptions = {
    leaseMs: options.leaseMs,
    holder: options.holder,
    ...(options.claimDetail ? { detail: options.claimDetail } : {}),
    ...(plan.kind === 'proceed' ? { intent: plan.intent } : {}),
    ...(options.countProposal ? { countProposal: true } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
  };
  let claim: ClaimResult;
  try {
    claim = await store.claim(call, claimOptions);
    if (claim.kind === 'busy' && !options.busyAtOnce) {
      // Its holder may have died (this attempt is often Temporal's retry after a missed heartbeat):
      // its lease lapses within one lease unless renewed. Wait for that here and claim once more,
      // rather than answer busy and have the workflow come back after the lapse (a workflow task,
      // a timer and a new activity later). A live holder renews meanwhile: busy again, one claim spent.
      await untilLapse(claim.leaseUntil, options);
      claimSentAt = performance.now();
      claim = await store.claim(call, claimOptions); // a proposal is counted once whatever the claims
    }
  } catch (err) {
    await discard();
    throw err;
  }
  if (claim.kind !== 'claimed') await discard();
  const ref: CallRef = { trajectoryId: call.trajectoryId, turn: call.turn, callId: call.callId, key: call.key, tool: call.tool };
  switch (claim.kind) {
    case 'elsewhere':
      throw new RunsElsewhere(claim.host);
    case 'completed': {
      // An earlier attempt of this same activity completed it and its report was lost (its worker
      // died after the completion committed): the call ran, in this call — not a replay.
      const replayed = !(await completedByEarlierAttempt(store, claim.record, options.holder));
      if (replayed) emitCallEvent({ event: 'replayed', generation: claim.record.generation, ...ref });
      return { kind: 'completed', result: claim.record.result as Result, replayed, generation: claim.record.generation };
    }
    case 'busy':
      emitCallEvent({ event: 'busy', generation: claim.generation, ...ref });
      return { kind: 'busy', generation: claim.generation, leaseUntil: claim.leaseUntil.toISOString() };
    case 'in_doubt': {
      const detail = claim.record.detail ?? 'effect unknown';
      const cause = claim.leaseExpiredNow ? 'lease_expired' : 'found_in_doubt';
      emitCallEvent({ event: 'in_doubt', generation: claim.record.generation, cause, detail, ...ref });
      // This claim found the holder gone: probe now, here, rather than after a workflow round trip.
      // Best effort — the workflow probes anyway, and then finds the record settled. Never for a
      // workspace call whose executor ran on another host: this disk does not hold its evidence.
      if (claim.leaseExpiredNow && (options.host === undefined || claim.record.host === options.host)) {
        await probeRecord(store, tool, call.args, claim.record, env).catch((err: unknown) => {
          console.warn(`settle: probe of ${call.tool} ${call.key.slice(0, 8)}… after its lease lapsed failed: ${errorMessage(err)}`);
        });
      }
      return { kind: 'in_doubt', generation: claim.record.generation, detail };
    }
    case 'claimed':
      emitCallEvent({ event: 'claimed', generation: claim.generation, from: claim.from, ...ref });
      break;
  }
  const { generation } = claim;
  if (plan.kind === 'proceed') options.onClaimed?.({ key: call.key, generation, intent: plan.intent });
  const durable = durableWriter(options);
  const writeBack = writerBack(store, durable, ref, call, generation, plan.kind === 'proceed' ? plan.intent : null, actor, options.host);

  // From here on this executor owns (key, generation). Nothing below releases the key on an
  // exception unless the exception proves there was no effect.
  if (plan.kind === 'failed') return release(store, durable, ref, generation, plan.detail, actor);
  if (plan.kind === 'answer') return finish(store, durable, ref, generation, plan.result, actor, writeBack);
  const prepared = await preparing;
  if (prepared && !prepared.ok) {
    // A prepare that fails has had no effect (SettledTool.prepare): nothing to settle but the release.
    return release(
      store,
      durable,
      ref,
      generation,
      `could not prepare the effect, nothing touched: ${errorMessage(prepared.error)}`,
      actor,
    );
  }
  await failpoint('settled.after_claim');

  const lease = new LeaseKeeper(store, ref, generation, options, claimSentAt);
  const intent = plan.intent;
  // Once this executor recorded the outcome itself, what the tool kept for a probe can go.
  const recorded = () =>
    tool.afterSettled?.(call.args, intent, { key: call.key, generation }).catch((err: unknown) => {
      console.warn(`settle: clean-up after ${call.tool} ${call.key.slice(0, 8)}… failed: ${errorMessage(err)}`);
    });
  let result: Result;
  try {
    const ctx = { key: call.key, generation, assertLeaseHeld: () => lease.assertHeld(), ledger: store.runs };
    result = prepared ? await prepared.value.apply(ctx) : await tool.execute(call.args, intent, env, ctx);
  } catch (err) {
    lease.stop();
    if (err instanceof NoEffect) {
      return release(store, durable, ref, generation, `${err.name}: ${err.message}`, actor, recorded);
    }
    const detail = `execution ended with an exception, effect unknown: ${errorMessage(err)}`;
    let marked = await durable('mark in doubt', () => store.markInDoubt(call.key, generation, detail, actor));
    if (!marked.ok) marked = (await writeBack(marked, { as: 'IN_DOUBT', detail })) ?? marked;
    if (marked.ok) {
      emitCallEvent({ event: 'in_doubt', generation, cause: 'exception', detail, ...ref });
      return { kind: 'in_doubt', generation, detail };
    }
    return outcomeOf(await durable('read the record', () => store.get(call.key)));
  }
  lease.stop();
  await failpoint('settled.after_execute');
  // The effect happened and only this process knows its result: record it, however long the
  // database takes to come back (fenced by generation; a late completion settles an IN_DOUBT).
  return finish(store, durable, ref, generation, result, actor, writeBack, recorded);
}

type Durable = <T>(what: string, write: () => Promise<T>) => Promise<T>;

/** Writes back a record found gone after a fenced write; null when the record is not gone (another holds it). */
type WriterBack = (refused: FencedWrite & { ok: false }, outcome: WriteBack) => Promise<FencedWrite | null>;

/**
 * An outcome only this executor knows must not be dropped because the record store forgot the
 * claim (a failover to a replica that never received it): a record gone, or back at NOT_EXECUTED
 * before this claim's generation, is written back with that outcome — never over another's claim.
 * Without it the call would read as never executed and its retry would run the effect again.
 */
function writerBack(
  store: EndpointStore,
  durable: Durable,
  ref: CallRef,
  call: ClaimRequest,
  generation: number,
  intent: unknown,
  actor: Actor,
  host: string | undefined,
): WriterBack {
  return async (refused, outcome) => {
    const current = refused.current;
    const vanished = current === null || (current.state === 'NOT_EXECUTED' && current.generation < generation);
    if (!vanished) return null;
    const written = await durable('write back', () =>
      store.writeBack(call, generation, intent, outcome, actor, host !== undefined ? { host } : {}),
    );
    emitCallEvent({ event: 'record_written_back', generation, state: outcome.as, written: written.ok, ...ref });
    return written;
  };
}

/**
 * Whether the completion of `record` was written by an earlier attempt of the activity `holder`
 * names (`<identity>#<activity id>@<attempt>`, settled-calls.ts), on any worker: its completion
 * event's actor is `worker:<identity>#<same activity id>@<lower attempt>`. Read only on a retry.
 * Another activity of the same call (the same call proposed again, or its activity-lane attempt
 * after a local one) replays.
 */
async function completedByEarlierAttempt(store: EndpointStore, record: EndpointRecord, holder: string): Promise<boolean> {
  const attemptOf = (text: string) => /#([^#@]+)@(\d+)$/.exec(text);
  const mine = attemptOf(holder);
  if (mine === null || Number(mine[2]) < 2) return false;
  const completion = (await store.events(record.key))
    .reverse()
    .find((e) => e.generation === record.generation && e.toState === 'COMPLETED' && e.fromState !== 'COMPLETED');
  const theirs = completion?.actor.startsWith('worker:') ? attemptOf(completion.actor) : null;
  return theirs !== null && theirs[1] === mine[1] && Number(theirs[2]) < Number(mine[2]);
}

/**
 * The earlier attempt's claim is gone — no record, or NOT_EXECUTED at an older generation than it
 * claimed — so the record store forgot it (committed, then lost in a failover). That attempt may
 * have run the effect: the record is written back IN_DOUBT with its intent, never claimed afresh.
 * Null when the store still has the claim, or another claim got there first: the usual path decides.
 */
async function inDoubtIfForgotten(
  store: EndpointStore,
  call: ClaimRequest,
  earlier: ClaimEvidence,
  host: string | undefined,
  actor: Actor,
): Promise<CallOutcome<never> | null> {
  const record = await store.get(call.key);
  if (record && !(record.state === 'NOT_EXECUTED' && record.generation < earlier.generation)) return null;
  const { generation } = earlier;
  const detail = `the record store no longer has generation ${generation}, which an earlier attempt of this call claimed (its heartbeat says so): a failover lost it, and the effect may have happened`;
  const written = await store.writeBack(call, generation, earlier.intent, { as: 'IN_DOUBT', detail }, actor, {
    ...(host !== undefined ? { host } : {}),
    reason:
      'the claim of an earlier attempt was gone at its retry (a failover to a replica that never received it): written back by the retry',
  });
  const ref: CallRef = { trajectoryId: call.trajectoryId, turn: call.turn, callId: call.callId, key: call.key, tool: call.tool };
  emitCallEvent({ event: 'record_written_back', generation, state: 'IN_DOUBT', written: written.ok, ...ref });
  if (!written.ok) return null;
  emitCallEvent({ event: 'in_doubt', generation, cause: 'claim_forgotten', detail, ...ref });
  return { kind: 'in_doubt', generation, detail };
}

/**
 * Sleeps until just after `leaseUntil` (database clock, read against this host's: a skew only
 * costs one more busy answer), at most one lease, heartbeating at the renewal pace meanwhile.
 */
async function untilLapse(leaseUntil: Date, options: RunOptions): Promise<void> {
  await sleepHeartbeating(Math.min(Math.max(0, leaseUntil.getTime() - Date.now() + 50), options.leaseMs + 50), options);
}

/** Sleeps `ms`, heartbeating at the lease's renewal pace (Temporal's heartbeat timeout is the lease). */
async function sleepHeartbeating(ms: number, options: RunOptions): Promise<void> {
  const slice = Math.max(10, Math.floor(options.leaseMs / 3));
  for (let waited = 0; waited < ms; waited += slice) {
    options.heartbeat?.();
    await new Promise((r) => setTimeout(r, Math.min(slice, ms - waited)));
  }
}

/**
 * Writes that carry knowledge only this executor has — a result, or proof that nothing happened —
 * are retried until the database answers (backoff 250 ms doubling to 1 s: one cheap statement a second at most), heartbeating meanwhile
 * so Temporal does not hand the call to another worker: the executor is alive, only the database
 * is not. Errors that are not about reaching the database are thrown at once.
 */
function durableWriter(options: RunOptions): Durable {
  return async (what, write) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (!isTransientDatabaseError(err)) throw err;
        options.onDatabaseRetry?.(what, err as Error);
        await sleepHeartbeating(Math.min(250 * 2 ** attempt, 1_000), options);
      }
    }
  };
}

/**
 * Probes an IN_DOUBT record and applies the verdict. Without a recorded intent the effect cannot
 * have started (intent precedes effect): NOT_EXECUTED without asking the tool.
 */
export async function probeRecord<Args, Intent, Result>(
  store: EndpointStore,
  tool: SettledTool<Args, Intent, Result>,
  args: Args,
  record: EndpointRecord,
  env: ToolEnv,
): Promise<{ verdict: ProbeVerdict<Result> } & ProbeApplication> {
  const verdict: ProbeVerdict<Result> =
    record.intent == null
      ? { verdict: 'not_applied', detail: 'no intent recorded: the effect never started' }
      : await tool.probe(args, record.intent as Intent, env, { key: record.key, generation: record.generation, ledger: store.runs });
  emitCallEvent({
    event: 'probed',
    verdict: verdict.verdict,
    final: verdict.verdict === 'unknown' && verdict.final === true,
    detail: verdict.detail,
    generation: record.generation,
    trajectoryId: record.trajectoryId,
    turn: record.turn,
    callId: record.callId,
    key: record.key,
    tool: record.tool,
  });
  return { verdict, ...(await applyProbe(store, record, verdict)) };
}

/** A probe verdict applied to its record: the state it left, and who settled the record (null while IN_DOUBT). */
export interface ProbeApplication {
  state: EndpointRecord['state'];
  /** This probe's verdict settled the record. */
  applied: boolean;
  settledBy: string | null;
}

/**
 * Applies a probe verdict to an IN_DOUBT record (docs/design.md#probes): applied → COMPLETED,
 * not applied → NOT_EXECUTED, unknown → stays IN_DOUBT. Fenced by the generation read.
 */
export async function applyProbe<Result>(
  store: EndpointStore,
  record: EndpointRecord,
  verdict: ProbeVerdict<Result>,
): Promise<ProbeApplication> {
  const actor: Actor = `probe:${record.tool}`;
  if (verdict.verdict === 'unknown') return { state: 'IN_DOUBT', applied: false, settledBy: null };
  const write =
    verdict.verdict === 'applied'
      ? await store.settle(record.key, record.generation, { as: 'COMPLETED', result: verdict.result }, actor, verdict.detail)
      : await store.settle(record.key, record.generation, { as: 'NOT_EXECUTED' }, actor, verdict.detail);
  if (write.ok) {
    emitCallEvent({
      event: 'settled',
      key: record.key,
      generation: record.generation,
      trajectoryId: record.trajectoryId,
      turn: record.turn,
      callId: record.callId,
      by: 'probe',
      verdict: verdict.verdict,
      state: write.record.state,
      actor,
      reason: verdict.detail,
    });
    return { state: write.record.state, applied: true, settledBy: actor };
  }
  // Fenced out: settled meanwhile (an operator's `settle resolve`, a late completion). Whoever it
  // was is what the caller reports, not this probe.
  return { state: write.current?.state ?? 'IN_DOUBT', applied: false, settledBy: write.current?.settledBy ?? null };
}

async function finish<Result>(
  store: EndpointStore,
  durable: Durable,
  ref: CallRef,
  generation: number,
  result: Result,
  actor: Actor,
  writeBack: WriterBack,
  onRecorded?: () => Promise<void> | undefined,
): Promise<CallOutcome<Result>> {
  const { key } = ref;
  let done = await durable('complete', () => store.complete(key, generation, result, actor));
  if (!done.ok) done = (await writeBack(done, { as: 'COMPLETED', result })) ?? done;
  if (done.ok) {
    await onRecorded?.();
    emitCallEvent({ event: 'completed', generation, ...ref });
    if (done.record.settledBy !== null) emitLateSettlement(ref, generation, 'applied', 'COMPLETED', actor);
    return { kind: 'completed', result, replayed: false, generation };
  }
  // Fenced out: someone settled or re-claimed this key while we ran. The record is the truth;
  // the refused write is in the event trail for operators.
  return outcomeOf(await durable('read the record', () => store.get(key)));
}

async function release<Result>(
  store: EndpointStore,
  durable: Durable,
  ref: CallRef,
  generation: number,
  detail: string,
  actor: Actor,
  onRecorded?: () => Promise<void> | undefined,
): Promise<CallOutcome<Result>> {
  const { key } = ref;
  const released = await durable('release', () => store.releaseNoEffect(key, generation, detail, actor));
  if (released.ok) {
    await onRecorded?.();
    emitCallEvent({ event: 'released', generation, detail, ...ref });
    if (released.record.settledBy !== null) emitLateSettlement(ref, generation, 'not_applied', 'NOT_EXECUTED', actor);
    return { kind: 'released', generation, detail };
  }
  return outcomeOf(await durable('read the record', () => store.get(key)));
}

/**
 * The executor's own write settled a record that had gone IN_DOUBT meanwhile (its lease lapsed while
 * it worked): counted as a settlement, as a probe's or an operator's would be. The store sets
 * `settled_by` only in that case.
 */
function emitLateSettlement(ref: CallRef, generation: number, verdict: 'applied' | 'not_applied', state: string, actor: Actor): void {
  const reason =
    verdict === 'applied' ? 'late completion by the executor of this generation' : 'late release by the executor: its effect never started';
  emitCallEvent({ event: 'settled', ...ref, generation, by: 'executor', verdict, state, actor, reason });
}

/** The outcome a caller should see for a record it no longer owns. */
function outcomeOf<Result>(record: EndpointRecord | undefined): CallOutcome<Result> {
  if (!record) return { kind: 'released', generation: 0, detail: 'record no longer exists' };
  switch (record.state) {
    case 'COMPLETED':
      return { kind: 'completed', result: record.result as Result, replayed: true, generation: record.generation };
    case 'IN_FLIGHT':
      return { kind: 'busy', generation: record.generation, leaseUntil: record.leaseUntil!.toISOString() };
    case 'IN_DOUBT':
      return { kind: 'in_doubt', generation: record.generation, detail: record.detail ?? 'effect unknown' };
    case 'NOT_EXECUTED':
      return { kind: 'released', generation: record.generation, detail: record.detail ?? 'not executed' };
  }
}

/** Renews the lease in the background and answers "may I still act?" on the monotonic clock. */
class LeaseKeeper {
  private lastRenewalSentAt: number;
  private lost = false;
  private readonly timer: NodeJS.Timeout;
  private readonly marginMs: number;

  constructor(
    private readonly store: EndpointStore,
    private readonly ref: CallRef,
    private readonly generation: number,
    private readonly options: RunOptions,
    claimSentAt: number,
  ) {
    this.lastRenewalSentAt = claimSentAt;
    this.marginMs = options.marginMs ?? Math.max(50, Math.floor(options.leaseMs / 5));
    this.timer = setInterval(() => void this.renew(), Math.max(10, Math.floor(options.leaseMs / 3)));
  }

  private async renew(): Promise<void> {
    if (this.lost) return;
    const sentAt = performance.now();
    // Once the lease may have lapsed by our own clock, another executor may have taken the call
    // over: never resurrect it, even if the database would still accept the renewal.
    if (sentAt - this.lastRenewalSentAt > this.options.leaseMs - this.marginMs) {
      this.lose('lapsed on this worker before it could be renewed');
      return;
    }
    try {
      const renewed = await this.store.renewLease(this.ref.key, this.generation, this.options.leaseMs);
      if (!renewed.ok) {
        this.lose(`refused: the record is ${renewed.current?.state ?? 'gone'} at generation ${renewed.current?.generation ?? '-'}`);
        return;
      }
      // Measured from when the request was sent: the database lease runs at least that long.
      this.lastRenewalSentAt = Math.max(this.lastRenewalSentAt, sentAt);
      this.options.heartbeat?.();
    } catch (err) {
      // A failed renewal is not a lost lease yet; the monotonic check decides. If only the
      // database is unreachable, this executor is still alive and will record its outcome when
      // the database returns: keep Temporal from handing the call to another worker meanwhile.
      if (isTransientDatabaseError(err)) this.options.heartbeat?.();
    }
  }

  private lose(reason: string): void {
    this.lost = true;
    emitCallEvent({ event: 'lease_renewal_failed', generation: this.generation, reason, ...this.ref });
  }

  assertHeld(): void {
    const age = performance.now() - this.lastRenewalSentAt;
    if (this.lost) throw new LeaseLost("the lease was lost (renewal refused, or lapsed on this process's clock); not starting the effect");
    if (age > this.options.leaseMs - this.marginMs) {
      throw new LeaseLost(`last lease renewal was ${Math.round(age)} ms ago (lease ${this.options.leaseMs} ms); not starting the effect`);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** A promise's outcome as a value, so it can wait unobserved while the claim runs (no unhandled rejection). */
function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}
