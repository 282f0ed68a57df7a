/**
 * The endpoint-record store (DESIGN.md §2) on Kysely + Postgres.
 *
 * Every operation is ONE SQL statement. State changes are written as a data-modifying CTE that
 * also appends the audit event, so the record and its event commit together (same statement,
 * same transaction) and a claim is atomic without an explicit transaction round trip.
 *
 * Rules enforced here, not by callers:
 * - claim is a single INSERT … ON CONFLICT DO UPDATE … WHERE (never two live claims of one key);
 * - leases are compared on the database clock (now()), never a worker's clock;
 * - every write after the claim is fenced by (key, generation); refused writes leave an event;
 * - a late completion with the right generation may settle IN_DOUBT as COMPLETED;
 * - an expired lease turns the record IN_DOUBT on the next claim, atomically;
 * - retention never touches IN_DOUBT (nor IN_FLIGHT).
 */
import { type Kysely, type Expression, type SqlBool, sql } from 'kysely';
import type { Actor, RecordState } from '../../core/records';
import type { EndpointEventRow, EndpointRecordRow, SettleDatabase } from './schema';

export interface EndpointRecord {
  key: string;
  trajectoryId: string;
  turn: number;
  callId: string;
  tool: string;
  args: unknown;
  state: RecordState;
  generation: number;
  /** Database clock. Set only while IN_FLIGHT. */
  leaseUntil: Date | null;
  holder: string | null;
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
}

export type ClaimResult =
  /** This caller now holds the key at `generation` until `leaseUntil` and may execute. */
  | { kind: 'claimed'; generation: number; leaseUntil: Date; from: 'UNSEEN' | 'NOT_EXECUTED' }
  /** The effect already happened: replay the stored result, do not execute. */
  | { kind: 'completed'; record: EndpointRecord }
  /** Someone else holds a live lease. */
  | { kind: 'busy'; generation: number; leaseUntil: Date }
  /** Unknown effect: refuse until settled. `leaseExpiredNow` = this claim turned it IN_DOUBT. */
  | { kind: 'in_doubt'; record: EndpointRecord; leaseExpiredNow: boolean };

/** A fenced write either applied, or was refused because the record is no longer in that state/generation. */
export type FencedWrite =
  | { ok: true; record: EndpointRecord }
  | { ok: false; current: { state: RecordState; generation: number } | null };

export type Settlement =
  | { as: 'COMPLETED'; result: unknown }
  | { as: 'NOT_EXECUTED' };

export interface ListFilter {
  state?: RecordState;
  trajectoryId?: string;
  limit?: number;
}

const RECORDS = 'settle_endpoint_records' as const;
const EVENTS = 'settle_endpoint_events' as const;

const leaseFromNow = (leaseMs: number) => sql<Date>`now() + ${leaseMs} * interval '1 millisecond'`;
const now = sql<Date>`now()`;

export class EndpointStore {
  constructor(readonly db: Kysely<SettleDatabase>) {}

  /**
   * Claims `request.key` in one atomic statement:
   * UNSEEN → IN_FLIGHT (generation 1); NOT_EXECUTED → IN_FLIGHT (generation + 1);
   * IN_FLIGHT with an expired lease → IN_DOUBT. Anything else is reported, not changed.
   */
  async claim(request: ClaimRequest, options: ClaimOptions): Promise<ClaimResult> {
    assertLease(options.leaseMs);
    const holderActor: Actor = `worker:${options.holder}`;
    const claimed = await this.db
      .with('claimed', (db) =>
        db
          .insertInto(RECORDS)
          .values({
            key: request.key,
            trajectory_id: request.trajectoryId,
            turn: request.turn,
            call_id: request.callId,
            tool: request.tool,
            args: JSON.stringify(request.args),
            state: 'IN_FLIGHT',
            generation: 1,
            lease_until: leaseFromNow(options.leaseMs),
            holder: options.holder,
          })
          .onConflict((oc) =>
            oc
              .column('key')
              .doUpdateSet((eb) => {
                const wasNotExecuted = eb(`${RECORDS}.state`, '=', 'NOT_EXECUTED');
                return {
                  state: eb.case().when(wasNotExecuted).then(sql.lit<RecordState>('IN_FLIGHT')).else(sql.lit<RecordState>('IN_DOUBT')).end(),
                  generation: eb
                    .case()
                    .when(wasNotExecuted)
                    .then(eb(`${RECORDS}.generation`, '+', 1))
                    .else(eb.ref(`${RECORDS}.generation`))
                    .end(),
                  lease_until: eb.case().when(wasNotExecuted).then(eb.ref('excluded.lease_until')).else(null).end(),
                  holder: eb.case().when(wasNotExecuted).then(eb.ref('excluded.holder')).else(null).end(),
                  intent: eb.case().when(wasNotExecuted).then(null).else(eb.ref(`${RECORDS}.intent`)).end(),
                  detail: eb
                    .case()
                    .when(wasNotExecuted)
                    .then(null)
                    .else(sql.lit('lease expired while IN_FLIGHT: the executor stopped renewing; effect unknown'))
                    .end(),
                  updated_at: now,
                };
              })
              .where((eb) =>
                eb.or([
                  eb(`${RECORDS}.state`, '=', 'NOT_EXECUTED'),
                  eb.and([eb(`${RECORDS}.state`, '=', 'IN_FLIGHT'), eb(`${RECORDS}.lease_until`, '<=', now)]),
                ]),
              ),
          )
          .returningAll(),
      )
      .with('event', (db) =>
        db.insertInto(EVENTS).columns(['key', 'generation', 'from_state', 'to_state', 'actor', 'detail']).expression((eb) =>
          eb.selectFrom('claimed').select((s) => [
            'claimed.key',
            'claimed.generation',
            // The new row tells where it came from: generation 1 IN_FLIGHT is a fresh insert,
            // a later IN_FLIGHT generation was NOT_EXECUTED, IN_DOUBT here is a lease expiry.
            s
              .case()
              .when(s.and([s('claimed.state', '=', 'IN_FLIGHT'), s('claimed.generation', '=', 1)]))
              .then(sql.lit('UNSEEN'))
              .when('claimed.state', '=', 'IN_FLIGHT')
              .then(sql.lit('NOT_EXECUTED'))
              .else(sql.lit('IN_FLIGHT'))
              .end()
              .as('from_state'),
            'claimed.state',
            s
              .case()
              .when('claimed.state', '=', 'IN_FLIGHT')
              .then(sql.val<string>(holderActor))
              .else(sql.lit('lease-expiry'))
              .end()
              .as('actor'),
            sql<string>`jsonb_build_object('holder', ${options.holder}::text, 'lease_ms', ${options.leaseMs}::int)`.as('detail'),
          ]),
        ),
      )
      .selectFrom('claimed')
      .selectAll()
      .executeTakeFirst();

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
        // Raced with a settlement to NOT_EXECUTED after our statement: claim again.
        return this.claim(request, options);
    }
  }

  /** Records the call's intent (pre-state facts a probe will need). Only by the live claim. */
  async recordIntent(key: string, generation: number, intent: unknown, actor: Actor): Promise<FencedWrite> {
    return this.transition({
      key,
      generation,
      from: ['IN_FLIGHT'],
      to: 'IN_FLIGHT',
      actor,
      detail: { op: 'intent', intent },
      // Refuse once the lease has lapsed on the database clock: an executor must not start an
      // effect on a claim that another caller may already be turning IN_DOUBT.
      extraWhere: sql<SqlBool>`lease_until > now()`,
      set: { intent: JSON.stringify(intent) },
    });
  }

  /**
   * Extends the lease of the live claim. Not an audit event (it would flood the trail); the
   * record's `lease_until` shows the latest renewal. Succeeds even after the lease lapsed as long
   * as nobody took the claim over: the record's state is the authority, not the clock.
   */
  async renewLease(key: string, generation: number, leaseMs: number): Promise<FencedWrite> {
    assertLease(leaseMs);
    const row = await this.db
      .updateTable(RECORDS)
      .set({ lease_until: leaseFromNow(leaseMs), updated_at: now })
      .where('key', '=', key)
      .where('generation', '=', generation)
      .where('state', '=', 'IN_FLIGHT')
      .returningAll()
      .executeTakeFirst();
    if (row) return { ok: true, record: toRecord(row) };
    return { ok: false, current: await this.currentState(key) };
  }

  /**
   * The effect happened; store its result. From IN_FLIGHT, or from IN_DOUBT with the same
   * generation (a late completion carries real knowledge and settles the doubt).
   */
  async complete(key: string, generation: number, result: unknown, actor: Actor): Promise<FencedWrite> {
    return this.transition({
      key,
      generation,
      from: ['IN_FLIGHT', 'IN_DOUBT'],
      to: 'COMPLETED',
      actor,
      detail: { op: 'complete' },
      set: {
        result: JSON.stringify(result ?? null),
        // A completion that settles an IN_DOUBT record is recorded as its settlement.
        settled_by: sql`case when ${sql.ref(`${RECORDS}.state`)} = 'IN_DOUBT' then ${actor}::text else null end`,
        settle_reason: sql`case when ${sql.ref(`${RECORDS}.state`)} = 'IN_DOUBT' then 'late completion by the executor of this generation' else null end`,
      },
    });
  }

  /** The tool proved that no effect happened: NOT_EXECUTED, so the key may be claimed again. */
  async releaseNoEffect(key: string, generation: number, detail: string, actor: Actor): Promise<FencedWrite> {
    return this.transition({
      key,
      generation,
      from: ['IN_FLIGHT'],
      to: 'NOT_EXECUTED',
      actor,
      detail: { op: 'release', reason: detail },
      set: { detail },
    });
  }

  /** Execution ended with an unknown effect. The key stays claimed until a probe or operator settles it. */
  async markInDoubt(key: string, generation: number, detail: string, actor: Actor): Promise<FencedWrite> {
    return this.transition({
      key,
      generation,
      from: ['IN_FLIGHT'],
      to: 'IN_DOUBT',
      actor,
      detail: { op: 'in_doubt', reason: detail },
      set: { detail },
    });
  }

  /** Settles an IN_DOUBT record with the generation it was read at, recording who and why. */
  async settle(key: string, generation: number, settlement: Settlement, actor: Actor, reason: string): Promise<FencedWrite> {
    return this.transition({
      key,
      generation,
      from: ['IN_DOUBT'],
      to: settlement.as,
      actor,
      detail: { op: 'settle', reason },
      set: {
        result: settlement.as === 'COMPLETED' ? JSON.stringify(settlement.result ?? null) : null,
        settled_by: actor,
        settle_reason: reason,
      },
    });
  }

  async get(key: string): Promise<EndpointRecord | undefined> {
    const row = await this.db.selectFrom(RECORDS).selectAll().where('key', '=', key).executeTakeFirst();
    return row && toRecord(row);
  }

  async events(key: string): Promise<EndpointEvent[]> {
    const rows = await this.db.selectFrom(EVENTS).selectAll().where('key', '=', key).orderBy('id').execute();
    return rows.map(toEvent);
  }

  async list(filter: ListFilter = {}): Promise<EndpointRecord[]> {
    let q = this.db.selectFrom(RECORDS).selectAll();
    if (filter.state) q = q.where('state', '=', filter.state);
    if (filter.trajectoryId) q = q.where('trajectory_id', '=', filter.trajectoryId);
    const rows = await q
      .orderBy('trajectory_id')
      .orderBy('turn')
      .orderBy('created_at')
      .limit(filter.limit ?? 1000)
      .execute();
    return rows.map(toRecord);
  }

  /**
   * Retention: deletes settled records (COMPLETED, NOT_EXECUTED) last changed more than
   * `olderThanMs` ago, with their events. IN_DOUBT and IN_FLIGHT are never purged. Choose
   * `olderThanMs` longer than any trajectory that may still replay its calls.
   */
  async purgeSettled(olderThanMs: number): Promise<number> {
    if (!Number.isSafeInteger(olderThanMs) || olderThanMs < 0) {
      throw new RangeError(`olderThanMs: must be an integer ≥ 0 (got ${olderThanMs})`);
    }
    const rows = await this.db
      .with('purged', (db) =>
        db
          .deleteFrom(RECORDS)
          .where('state', 'in', ['COMPLETED', 'NOT_EXECUTED'])
          .where('updated_at', '<', sql<Date>`now() - ${olderThanMs} * interval '1 millisecond'`)
          .returning('key'),
      )
      .with('purged_events', (db) =>
        db.deleteFrom(EVENTS).where('key', 'in', (eb) => eb.selectFrom('purged').select('purged.key')),
      )
      .selectFrom('purged')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(rows.n);
  }

  /**
   * One fenced transition as one statement: lock the row only if it is at `generation` in one of
   * `from`, update it, and append the event with the state it came from.
   */
  private async transition(t: {
    key: string;
    generation: number;
    from: RecordState[];
    to: RecordState;
    actor: Actor;
    detail: Record<string, unknown>;
    set: Record<string, unknown>;
    extraWhere?: Expression<SqlBool>;
  }): Promise<FencedWrite> {
    const row = await this.db
      .with('old', (db) => {
        let q = db
          .selectFrom(RECORDS)
          .select(['key', 'state'])
          .where('key', '=', t.key)
          .where('generation', '=', t.generation)
          .where('state', 'in', t.from);
        if (t.extraWhere) q = q.where(t.extraWhere);
        return q.forUpdate();
      })
      .with('changed', (db) =>
        db
          .updateTable(RECORDS)
          .from('old')
          .set({
            ...(t.set as object),
            state: t.to,
            // Only IN_FLIGHT carries a lease (a CHECK constraint insists).
            ...(t.to === 'IN_FLIGHT' ? {} : { lease_until: null }),
            updated_at: now,
          })
          .whereRef(`${RECORDS}.key`, '=', 'old.key')
          .returningAll(RECORDS)
          .returning(sql<string>`old.state`.as('from_state')),
      )
      .with('event', (db) =>
        db
          .insertInto(EVENTS)
          .columns(['key', 'generation', 'from_state', 'to_state', 'actor', 'detail'])
          .expression((eb) =>
            eb
              .selectFrom('changed')
              .select([
                'changed.key',
                'changed.generation',
                'changed.from_state',
                'changed.state',
                sql.val<string>(t.actor).as('actor'),
                sql<string>`${JSON.stringify(t.detail)}::jsonb`.as('detail'),
              ]),
          ),
      )
      .selectFrom('changed')
      .selectAll()
      .executeTakeFirst();

    if (row) return { ok: true, record: toRecord(row) };

    // Refused: leave a trace, so an operator can see a zombie executor's late write.
    const current = await this.currentState(t.key);
    await this.db
      .insertInto(EVENTS)
      .values({
        key: t.key,
        generation: t.generation,
        from_state: current?.state ?? 'UNSEEN',
        to_state: current?.state ?? 'UNSEEN',
        actor: t.actor,
        detail: JSON.stringify({
          ...t.detail,
          refused: `fenced: wanted ${t.from.join('|')}@${t.generation} → ${t.to}`,
          current,
        }),
      })
      .execute();
    return { ok: false, current };
  }

  private async currentState(key: string): Promise<{ state: RecordState; generation: number } | null> {
    const row = await this.db.selectFrom(RECORDS).select(['state', 'generation']).where('key', '=', key).executeTakeFirst();
    return row ?? null;
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
