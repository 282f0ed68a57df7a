/**
 * The endpoint-record store (docs/design.md#endpoint-records) on Kysely + Postgres.
 *
 * Every operation is ONE SQL statement (statements.ts). State changes are data-modifying CTEs
 * that also append the audit event, so the record and its event commit together (same
 * statement, same transaction) and a claim is atomic without an explicit transaction.
 *
 * Rules enforced here, not by callers:
 * - claim is a single INSERT … ON CONFLICT DO UPDATE … WHERE (never two live claims of one key);
 * - leases are compared on the database clock (now()), never a worker's clock;
 * - every write after the claim is fenced by (key, generation); refused writes leave an event;
 * - a late completion (or a release proving no effect) with the right generation may settle IN_DOUBT;
 * - an expired lease turns the record IN_DOUBT on the next claim, atomically, or by the sweeper
 *   (sweepLapsedLeases) when nothing claims the key again;
 * - retention never touches IN_DOUBT (nor IN_FLIGHT).
 */
import { emitCallEvent, type FencedOp } from '../observability/events';
import { type Kysely, sql } from 'kysely';
import type { Actor, RecordState } from '../../core/records';
import type { EndpointEventRow, EndpointRecordRow, SettleDatabase } from './schema';
import type { PreparedStatement } from './prepared';
import { claimStatement, EVENTS, RECORDS, renewStatement, sweepStatement, transitionStatement, type TransitionParams } from './statements';
import { ShellRunStore } from './shell-runs';

/** A record: the logical call it is for (see ClaimRequest), and where it stands. */
export interface EndpointRecord extends ClaimRequest {
  state: RecordState;
  generation: number;
  /** Database clock. Set only while IN_FLIGHT. */
  leaseUntil: Date | null;
  holder: string | null;
  /** The host whose executor claimed this generation, for a workspace tool (core/hosts.ts); else null. */
  host: string | null;
  intent: unknown;
  result: unknown;
  detail: string | null;
  settledBy: string | null;
  settleReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface EndpointEvent {
  id: string;
  key: string;
  generation: number;
  fromState: string;
  toState: string;
  actor: string;
  detail: unknown;
  at: Date;
}

/** The logical call a claim is for. `key` must have been derived from the other fields. */
export interface ClaimRequest {
  key: string;
  trajectoryId: string;
  turn: number;
  callId: string;
  tool: string;
  args: unknown;
}

export interface ClaimOptions {
  /** Lease length on the database clock. Renewed by heartbeats while executing. */
  leaseMs: number;
  /** Who holds the claim (worker identity, activity attempt); shown to operators. */
  holder: string;
  /** Extra facts recorded on the claim event, e.g. the approval of an A3 call. */
  detail?: Record<string, unknown>;
  /**
   * The call's intent, planned read-only before the claim: a claim that takes the key
   * IN_FLIGHT stores it in the same statement (one commit instead of claim + recordIntent).
   * Whoever passes it must re-check the pre-state it describes before the effect.
   */
  intent?: unknown;
  /** Count the call as a valid proposal in settle_tool_calls (once per call) in the same statement. */
  countProposal?: boolean;
  /**
   * The claiming worker's host, for a tool whose effect lives in a workspace: recorded on the
   * claim, and a NOT_EXECUTED record another host claimed is not run here (`elsewhere`).
   */
  host?: string;
}

export type ClaimResult =
  /** This caller now holds the key at `generation` until `leaseUntil` and may execute. */
  | { kind: 'claimed'; generation: number; leaseUntil: Date; from: 'UNSEEN' | 'NOT_EXECUTED' }
  /** The effect already happened: replay the stored result, do not execute. */
  | { kind: 'completed'; record: EndpointRecord }
  /** Someone else holds a live lease. */
  | { kind: 'busy'; generation: number; leaseUntil: Date }
  /** Unknown effect: refuse until settled. `leaseExpiredNow` = this claim turned it IN_DOUBT. */
  | { kind: 'in_doubt'; record: EndpointRecord; leaseExpiredNow: boolean }
  /** NOT_EXECUTED, but its workspace is on `host`, not this claimer's: nothing claimed here. */
  | { kind: 'elsewhere'; host: string; generation: number };

/** A fenced write either applied, or was refused because the record is no longer in that state/generation. */
/** What a fenced-out writer learns of the record it lost: its state, generation and who settled it. */
export interface CurrentRecord {
  state: RecordState;
  generation: number;
  settledBy: string | null;
}

export type FencedWrite = { ok: true; record: EndpointRecord } | { ok: false; current: CurrentRecord | null };

export type Settlement = { as: 'COMPLETED'; result: unknown } | { as: 'NOT_EXECUTED' };

/** What the executor of a claim whose record vanished knows: the effect happened (its result), or not whether. */
export type WriteBack = { as: 'COMPLETED'; result: unknown } | { as: 'IN_DOUBT'; detail: string };

const WRITE_BACK_REASON =
  'the record of this claim was gone at its outcome (a failover to a replica that never received it): written back by its executor';

export interface ListFilter {
  state?: RecordState;
  trajectoryId?: string;
  limit?: number;
  /**
   * `trajectory` (default): by trajectory, turn, creation. `oldest`: the longest-standing first —
   * a lapsed lease from its expiry, anything else from its last transition (core/record-age.ts).
   */
  order?: 'trajectory' | 'oldest';
}

type Row = EndpointRecordRow & { from_state?: string };
type Transition<P extends TransitionParams> = PreparedStatement<P, Row>;

/** The statements, built once per database handle. */
function buildStatements(db: Kysely<SettleDatabase>) {
  const ref = (c: string) => sql.ref(`${RECORDS}.${c}`);
  return {
    claim: claimStatement(db),
    renew: renewStatement(db),
    sweep: sweepStatement(db),
    intent: transitionStatement<TransitionParams & { intent: string }>(db, {
      from: ['IN_FLIGHT'],
      to: 'IN_FLIGHT',
      // Refuse once the lease has lapsed on the database clock: an executor must not start an
      // effect on a claim that another caller may already be turning IN_DOUBT.
      extraWhere: sql<boolean>`lease_until > now()`,
      set: (p) => ({ intent: sql`${p.intent}::jsonb` }),
      params: ['intent'],
    }),
    complete: transitionStatement<TransitionParams & { result: string }>(db, {
      from: ['IN_FLIGHT', 'IN_DOUBT'],
      to: 'COMPLETED',
      set: (p) => ({
        result: sql`${p.result}::jsonb`,
        // A completion that settles an IN_DOUBT record is recorded as its settlement.
        settled_by: sql`case when ${ref('state')} = 'IN_DOUBT' then ${p.actor}::text else null end`,
        settle_reason: sql`case when ${ref('state')} = 'IN_DOUBT' then 'late completion by the executor of this generation' else null end`,
      }),
      params: ['result'],
    }),
    release: transitionStatement<TransitionParams & { reason: string }>(db, {
      // Also from IN_DOUBT with the same generation: the executor of that generation proved its
      // effect never started (e.g. it was paused past its lease and then refused to act), which
      // settles the doubt exactly as a late completion does.
      from: ['IN_FLIGHT', 'IN_DOUBT'],
      to: 'NOT_EXECUTED',
      set: (p) => ({
        detail: sql`${p.reason}::text`,
        settled_by: sql`case when ${ref('state')} = 'IN_DOUBT' then ${p.actor}::text else null end`,
        settle_reason: sql`case when ${ref('state')} = 'IN_DOUBT' then 'late release by the executor of this generation: its effect never started' else null end`,
      }),
      params: ['reason'],
    }),
    inDoubt: transitionStatement<TransitionParams & { reason: string }>(db, {
      from: ['IN_FLIGHT'],
      to: 'IN_DOUBT',
      set: (p) => ({ detail: sql`${p.reason}::text` }),
      params: ['reason'],
    }),
    settleCompleted: transitionStatement<TransitionParams & { result: string; reason: string }>(db, {
      from: ['IN_DOUBT'],
      to: 'COMPLETED',
      set: (p) => ({ result: sql`${p.result}::jsonb`, settled_by: sql`${p.actor}::text`, settle_reason: sql`${p.reason}::text` }),
      params: ['result', 'reason'],
    }),
    settleNotExecuted: transitionStatement<TransitionParams & { reason: string }>(db, {
      from: ['IN_DOUBT'],
      to: 'NOT_EXECUTED',
      set: (p) => ({ result: null, settled_by: sql`${p.actor}::text`, settle_reason: sql`${p.reason}::text` }),
      params: ['reason'],
    }),
  };
}

export class EndpointStore {
  private readonly statements: ReturnType<typeof buildStatements>;
  /** Which shell executions started (the start ledger, shell-runs.ts); purged with their records. */
  readonly runs: ShellRunStore;

  constructor(readonly db: Kysely<SettleDatabase>) {
    this.statements = buildStatements(db);
    this.runs = new ShellRunStore(db);
  }

  /** The host a trajectory's workspace calls were claimed on, if any was (they all name one: the first found). */
  async hostOfTrajectory(trajectoryId: string): Promise<string | null> {
    const row = await this.db
      .selectFrom(RECORDS)
      .select('host')
      .where('trajectory_id', '=', trajectoryId)
      .where('host', 'is not', null)
      .limit(1)
      .executeTakeFirst();
    return row?.host ?? null;
  }

  /**
   * Claims `request.key` in one atomic statement:
   * UNSEEN → IN_FLIGHT (generation 1); NOT_EXECUTED → IN_FLIGHT (generation + 1);
   * IN_FLIGHT with an expired lease → IN_DOUBT. Anything else is reported, not changed.
   * With `options.intent`, a claim to IN_FLIGHT also records the intent (and its event).
   */
  async claim(request: ClaimRequest, options: ClaimOptions): Promise<ClaimResult> {
    assertLease(options.leaseMs);
    const actor: Actor = `worker:${options.holder}`;
    const { rows } = await this.statements.claim.execute(this.db, {
      key: request.key,
      trajectory_id: request.trajectoryId,
      turn: request.turn,
      call_id: request.callId,
      tool: request.tool,
      args: JSON.stringify(request.args),
      lease_ms: options.leaseMs,
      holder: options.holder,
      actor,
      extra: JSON.stringify(options.detail ?? {}),
      intent: options.intent === undefined ? null : JSON.stringify(options.intent),
      count_proposal: options.countProposal ? 1 : 0,
      host: options.host ?? null,
    });
    const claimed = rows[0];

    if (claimed) {
      const record = toRecord(claimed);
      if (record.state === 'IN_FLIGHT') {
        return {
          kind: 'claimed',
          generation: record.generation,
          leaseUntil: record.leaseUntil!,
          from: record.generation === 1 ? 'UNSEEN' : 'NOT_EXECUTED',
        };
      }
      return { kind: 'in_doubt', record, leaseExpiredNow: true };
    }

    // Not transitioned: the row exists in a state a claim must not change. Read it (a separate
    // statement: the claim's snapshot may predate a concurrent inserter's commit).
    const current = await this.get(request.key);
    if (!current) {
      // Only possible if retention purged the row between the two statements: claim afresh.
      return this.claim(request, options);
    }
    switch (current.state) {
      case 'COMPLETED':
        return { kind: 'completed', record: current };
      case 'IN_DOUBT':
        return { kind: 'in_doubt', record: current, leaseExpiredNow: false };
      case 'IN_FLIGHT':
        return { kind: 'busy', generation: current.generation, leaseUntil: current.leaseUntil! };
      case 'NOT_EXECUTED':
        if (current.host !== null && current.host !== (options.host ?? null)) {
          return { kind: 'elsewhere', host: current.host, generation: current.generation };
        }
        // Raced with a settlement to NOT_EXECUTED after our statement: claim again.
        return this.claim(request, options);
    }
  }

  /**
   * Turns IN_DOUBT every IN_FLIGHT record whose lease lapsed at least `graceMs` ago on the
   * database clock (at most `limit` of them), with the claim's `lease-expiry` event: a holder that
   * died is found even when its call is never claimed again. Returns the records it turned, each
   * with the holder whose lease lapsed.
   * Fenced like the claim: a renewal or completion that commits first keeps the record; once
   * swept, renewals are refused and only that generation's late completion or release, a probe or
   * an operator settles it.
   */
  async sweepLapsedLeases(options: {
    graceMs: number;
    limit: number;
    sweeper: string;
  }): Promise<(EndpointRecord & { lapsedHolder: string | null })[]> {
    if (!Number.isSafeInteger(options.graceMs) || options.graceMs < 0) {
      throw new RangeError(`graceMs: must be an integer ≥ 0 (got ${options.graceMs})`);
    }
    if (!Number.isSafeInteger(options.limit) || options.limit < 1)
      throw new RangeError(`limit: must be an integer ≥ 1 (got ${options.limit})`);
    const { rows } = await this.statements.sweep.execute(this.db, {
      grace_ms: options.graceMs,
      limit: options.limit,
      sweeper: options.sweeper,
    });
    return rows.map((row) => ({ ...toRecord(row), lapsedHolder: row.lapsed_holder }));
  }

  /** Records the call's intent (pre-state facts a probe will need). Only by the live claim. */
  async recordIntent(key: string, generation: number, intent: unknown, actor: Actor): Promise<FencedWrite> {
    const json = JSON.stringify(intent ?? null);
    return this.transition(
      this.statements.intent,
      { key, generation, actor, detail: `{"op":"intent","intent":${json}}`, intent: json },
      'intent',
    );
  }

  /**
   * Extends the lease of the live claim. Not an audit event (it would flood the trail); the
   * record's `lease_until` shows the latest renewal. The record's state, not a clock, decides
   * whether the claim is still ours (executors also refuse to renew a lease that lapsed on their
   * own clock: see run-settled.ts).
   */
  async renewLease(key: string, generation: number, leaseMs: number): Promise<FencedWrite> {
    assertLease(leaseMs);
    const { rows } = await this.statements.renew.execute(this.db, { key, generation, lease_ms: leaseMs });
    if (rows[0]) return { ok: true, record: toRecord(rows[0]) };
    return { ok: false, current: await this.currentState(key) };
  }

  /**
   * The effect happened; store its result. From IN_FLIGHT, or from IN_DOUBT with the same
   * generation (a late completion carries real knowledge and settles the doubt).
   */
  async complete(key: string, generation: number, result: unknown, actor: Actor): Promise<FencedWrite> {
    return this.transition(
      this.statements.complete,
      { key, generation, actor, detail: '{"op":"complete"}', result: JSON.stringify(result ?? null) },
      'complete',
    );
  }

  /**
   * The tool proved that no effect happened: NOT_EXECUTED, so the key may be claimed again. From
   * IN_FLIGHT, or from IN_DOUBT with the same generation (a late release settles the doubt).
   */
  async releaseNoEffect(key: string, generation: number, reason: string, actor: Actor): Promise<FencedWrite> {
    return this.transition(
      this.statements.release,
      { key, generation, actor, detail: JSON.stringify({ op: 'release', reason }), reason },
      'release',
    );
  }

  /** Execution ended with an unknown effect. The key stays claimed until a probe or operator settles it. */
  async markInDoubt(key: string, generation: number, reason: string, actor: Actor): Promise<FencedWrite> {
    return this.transition(
      this.statements.inDoubt,
      { key, generation, actor, detail: JSON.stringify({ op: 'in_doubt', reason }), reason },
      'in_doubt',
    );
  }

  /** Settles an IN_DOUBT record with the generation it was read at, recording who and why. */
  async settle(key: string, generation: number, settlement: Settlement, actor: Actor, reason: string): Promise<FencedWrite> {
    const detail = JSON.stringify({ op: 'settle', reason });
    return settlement.as === 'COMPLETED'
      ? this.transition(
          this.statements.settleCompleted,
          { key, generation, actor, detail, reason, result: JSON.stringify(settlement.result ?? null) },
          'settle',
        )
      : this.transition(this.statements.settleNotExecuted, { key, generation, actor, detail, reason }, 'settle');
  }

  /**
   * The executor of (call, generation) found its record gone — a failover promoted a replica that
   * never received the claim — and writes it back with what it knows, in one statement with its
   * event. Never over another's claim: only where the key is absent, or NOT_EXECUTED at an older
   * generation (what this claim was taken from); otherwise refused, with the current state. The
   * claim's host is written back with it: a written-back IN_DOUBT record is probed on its host.
   */
  async writeBack(
    call: ClaimRequest,
    generation: number,
    intent: unknown,
    outcome: WriteBack,
    actor: Actor,
    options: { host?: string; reason?: string } = {},
  ): Promise<FencedWrite> {
    const completed = outcome.as === 'COMPLETED';
    const reason = options.reason ?? WRITE_BACK_REASON;
    const detail = JSON.stringify({ op: 'write_back', reason });
    const { rows } = await sql<Row>`
      with written as (
        insert into ${sql.table(RECORDS)} as r
          (key, trajectory_id, turn, call_id, tool, args, state, generation, lease_until, holder, intent, result, detail, settled_by, settle_reason, host)
        values (${call.key}, ${call.trajectoryId}, ${call.turn}, ${call.callId}, ${call.tool}, ${JSON.stringify(call.args)}::jsonb,
                ${outcome.as}, ${generation}, null, null, ${JSON.stringify(intent ?? null)}::jsonb,
                ${completed ? JSON.stringify(outcome.result ?? null) : null}::jsonb, ${completed ? null : outcome.detail},
                ${completed ? actor : null}, ${completed ? reason : null}, ${options.host ?? null})
        on conflict (key) do update set
          state = excluded.state, generation = excluded.generation, lease_until = null, holder = null, intent = excluded.intent,
          result = excluded.result, detail = excluded.detail, settled_by = excluded.settled_by, settle_reason = excluded.settle_reason,
          host = excluded.host, updated_at = now()
        where r.state = 'NOT_EXECUTED' and r.generation < excluded.generation
        returning r.*, case when r.xmax::text = '0' then 'UNSEEN' else 'NOT_EXECUTED' end as from_state
      ), event as (
        insert into ${sql.table(EVENTS)} (key, generation, from_state, to_state, actor, detail)
        select key, generation, from_state, state, ${actor}, ${detail}::jsonb from written
      )
      select * from written`.execute(this.db);
    if (rows[0]) return { ok: true, record: toRecord(rows[0]) };
    return { ok: false, current: await this.currentState(call.key) };
  }

  async get(key: string): Promise<EndpointRecord | undefined> {
    const row = await this.db.selectFrom(RECORDS).selectAll().where('key', '=', key).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Keys that start with `prefix` (lowercase hex), at most `limit` of them, in key order. */
  async keysStartingWith(prefix: string, limit = 10): Promise<string[]> {
    if (!/^[0-9a-f]{1,64}$/.test(prefix))
      throw new RangeError(`prefix: must be 1 to 64 lowercase hex digits (got ${JSON.stringify(prefix)})`);
    const rows = await this.db.selectFrom(RECORDS).select('key').where('key', 'like', `${prefix}%`).orderBy('key').limit(limit).execute();
    return rows.map((r) => r.key);
  }

  async events(key: string): Promise<EndpointEvent[]> {
    const rows = await this.db.selectFrom(EVENTS).selectAll().where('key', '=', key).orderBy('id').execute();
    return rows.map(toEvent);
  }

  async list(filter: ListFilter = {}): Promise<EndpointRecord[]> {
    let q = this.db.selectFrom(RECORDS).selectAll();
    if (filter.state) q = q.where('state', '=', filter.state);
    if (filter.trajectoryId) q = q.where('trajectory_id', '=', filter.trajectoryId);
    q =
      filter.order === 'oldest'
        ? q.orderBy(sql`case when state = 'IN_FLIGHT' and lease_until < now() then lease_until else updated_at end`).orderBy('key')
        : q.orderBy('trajectory_id').orderBy('turn').orderBy('created_at');
    const rows = await q.limit(filter.limit ?? 1000).execute();
    return rows.map(toRecord);
  }

  /**
   * Retention: deletes settled records (COMPLETED, NOT_EXECUTED) last changed more than
   * `olderThanMs` ago, with their events and shell start rows. IN_DOUBT and IN_FLIGHT are never purged. Choose
   * `olderThanMs` longer than any trajectory that may still replay its calls. `trajectoryIds`
   * limits the purge to those trajectories (e.g. one tenant's, or a test's own rows).
   */
  async purgeSettled(olderThanMs: number, scope: { trajectoryIds?: string[] } = {}): Promise<number> {
    if (!Number.isSafeInteger(olderThanMs) || olderThanMs < 0) {
      throw new RangeError(`olderThanMs: must be an integer ≥ 0 (got ${olderThanMs})`);
    }
    if (scope.trajectoryIds?.length === 0) return 0;
    const rows = await this.db
      .with('purged', (db) => {
        let purge = db
          .deleteFrom(RECORDS)
          .where('state', 'in', ['COMPLETED', 'NOT_EXECUTED'])
          .where('updated_at', '<', sql<Date>`now() - ${olderThanMs} * interval '1 millisecond'`);
        if (scope.trajectoryIds) purge = purge.where('trajectory_id', 'in', scope.trajectoryIds);
        return purge.returning('key');
      })
      .with('purged_events', (db) => db.deleteFrom(EVENTS).where('key', 'in', (eb) => eb.selectFrom('purged').select('purged.key')))
      .with('purged_runs', (db) =>
        db.deleteFrom('settle_shell_runs').where('key', 'in', (eb) => eb.selectFrom('purged').select('purged.key')),
      )
      .selectFrom('purged')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(rows.n);
  }

  /** Runs a fenced transition; a refused one leaves an event, so operators see late (zombie) writes. */
  private async transition<P extends TransitionParams>(statement: Transition<P>, params: P, op: FencedOp): Promise<FencedWrite> {
    const { rows } = await statement.execute(this.db, params);
    if (rows[0]) return { ok: true, record: toRecord(rows[0]) };

    const current = await this.currentState(params.key);
    await this.db
      .insertInto(EVENTS)
      .values({
        key: params.key,
        generation: params.generation,
        from_state: current?.state ?? 'UNSEEN',
        to_state: current?.state ?? 'UNSEEN',
        actor: params.actor,
        detail: JSON.stringify({ op, refused: `fenced: generation ${params.generation} no longer holds this record`, current }),
      })
      .execute();
    emitCallEvent({ event: 'fenced_write', key: params.key, generation: params.generation, op });
    return { ok: false, current };
  }

  private async currentState(key: string): Promise<CurrentRecord | null> {
    const row = await this.db
      .selectFrom(RECORDS)
      .select(['state', 'generation', 'settled_by as settledBy'])
      .where('key', '=', key)
      .executeTakeFirst();
    // Who settled it only while it stays settled: a record claimed again keeps the column from before.
    return row ? { ...row, settledBy: row.state === 'COMPLETED' || row.state === 'NOT_EXECUTED' ? row.settledBy : null } : null;
  }
}

function assertLease(leaseMs: number): void {
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 1) {
    throw new RangeError(`leaseMs: must be an integer ≥ 1 (got ${leaseMs})`);
  }
}

function toRecord(row: EndpointRecordRow): EndpointRecord {
  return {
    key: row.key,
    trajectoryId: row.trajectory_id,
    turn: row.turn,
    callId: row.call_id,
    tool: row.tool,
    args: row.args,
    state: row.state,
    generation: row.generation,
    leaseUntil: row.lease_until,
    holder: row.holder,
    host: row.host ?? null,
    intent: row.intent,
    result: row.result,
    detail: row.detail,
    settledBy: row.settled_by,
    settleReason: row.settle_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toEvent(row: EndpointEventRow): EndpointEvent {
  return {
    id: row.id,
    key: row.key,
    generation: row.generation,
    fromState: row.from_state,
    toState: row.to_state,
    actor: row.actor,
    detail: row.detail,
    at: row.at,
  };
}
