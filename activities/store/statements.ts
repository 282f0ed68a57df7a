/**
 * The SQL of the endpoint store, one prepared statement per operation (see prepared.ts).
 *
 * State changes are data-modifying CTEs that also append the audit event, so a record and its
 * event commit together in one statement: a claim is atomic without a transaction round trip.
 */
import { type Kysely, type Expression, type SqlBool, sql } from 'kysely';
import type { RecordState } from '../../core/records';
import type { SettleDatabase } from './schema';
import { PreparedStatement } from './prepared';

export const RECORDS = 'settle_endpoint_records' as const;
export const EVENTS = 'settle_endpoint_events' as const;

const now = sql<Date>`now()`;

/** The detail of a record whose lease lapsed, whoever turned it IN_DOUBT (a claim, or the sweeper). */
export const LAPSED_DETAIL = 'lease expired while IN_FLIGHT: the executor stopped renewing; effect unknown';
const leaseFromNow = (leaseMs: unknown) => sql<Date>`now() + ${leaseMs}::int * interval '1 millisecond'`;

export interface ClaimParams extends Record<string, string | number | null> {
  key: string;
  trajectory_id: string;
  turn: number;
  call_id: string;
  tool: string;
  /** JSON text. */
  args: string;
  lease_ms: number;
  holder: string;
  /** `worker:<holder>`. */
  actor: string;
  /** Extra facts for the claim event (e.g. the A3 approval), JSON object text. */
  extra: string;
  /**
   * The call's intent, JSON text, recorded by the claim itself (the tool planned read-only
   * before claiming); null: no intent yet (recordIntent may follow).
   */
  intent: string | null;
  /** 1: also count this call as a valid proposal (settle_tool_calls, once per call); 0: do not. */
  count_proposal: number;
  /** The claiming worker's host, for a workspace tool (core/hosts.ts); null for any other. */
  host: string | null;
}

/**
 * UNSEEN → IN_FLIGHT (generation 1); NOT_EXECUTED → IN_FLIGHT (generation + 1); IN_FLIGHT with an
 * expired lease (database clock) → IN_DOUBT. Returns the row only if it transitioned.
 *
 * In the same statement (one commit): a claim that takes the key IN_FLIGHT with an intent stores
 * it and appends the intent event after the claim event — the trail reads as if recordIntent had
 * followed; and, when asked, the valid proposal is counted (`ON CONFLICT DO NOTHING`: retries and
 * replays count once, whatever the claim's outcome).
 */
export function claimStatement(db: Kysely<SettleDatabase>) {
  return new PreparedStatement(
    (p: ClaimParams) =>
      db
        .with('claimed', (db) =>
          db
            .insertInto(RECORDS)
            .values({
              key: p.key,
              trajectory_id: p.trajectory_id,
              turn: p.turn,
              call_id: p.call_id,
              tool: p.tool,
              args: p.args,
              state: 'IN_FLIGHT',
              generation: 1,
              lease_until: leaseFromNow(p.lease_ms),
              holder: p.holder,
              host: sql`${p.host}::text`,
              intent: sql`${p.intent}::jsonb`,
            })
            .onConflict((oc) =>
              oc
                .column('key')
                .doUpdateSet((eb) => {
                  const wasNotExecuted = eb(`${RECORDS}.state`, '=', 'NOT_EXECUTED');
                  return {
                    state: eb
                      .case()
                      .when(wasNotExecuted)
                      .then(sql.lit<RecordState>('IN_FLIGHT'))
                      .else(sql.lit<RecordState>('IN_DOUBT'))
                      .end(),
                    generation: eb
                      .case()
                      .when(wasNotExecuted)
                      .then(eb(`${RECORDS}.generation`, '+', sql.lit(1)))
                      .else(eb.ref(`${RECORDS}.generation`))
                      .end(),
                    lease_until: eb.case().when(wasNotExecuted).then(eb.ref('excluded.lease_until')).else(null).end(),
                    holder: eb.case().when(wasNotExecuted).then(eb.ref('excluded.holder')).else(null).end(),
                    // The executor's host, for the probe of this generation: the old one's stays until then.
                    host: eb
                      .case()
                      .when(wasNotExecuted)
                      .then(eb.ref('excluded.host'))
                      .else(eb.ref(`${RECORDS}.host`))
                      .end(),
                    intent: eb
                      .case()
                      .when(wasNotExecuted)
                      .then(eb.ref('excluded.intent'))
                      .else(eb.ref(`${RECORDS}.intent`))
                      .end(),
                    detail: eb.case().when(wasNotExecuted).then(null).else(sql.lit(LAPSED_DETAIL)).end(),
                    // A lapsed lease's record is IN_DOUBT since its lease expired (its holder's last word), not since this claim noticed.
                    updated_at: eb
                      .case()
                      .when(wasNotExecuted)
                      .then(now)
                      .else(sql<Date>`${sql.ref(`${RECORDS}.lease_until`)}`)
                      .end(),
                  };
                })
                .where((eb) =>
                  eb.or([
                    // A workspace call runs again only on the host it ran on (its workspace's):
                    // another host's claim leaves it NOT_EXECUTED (EndpointStore.claim: elsewhere).
                    eb.and([
                      eb(`${RECORDS}.state`, '=', sql.lit('NOT_EXECUTED')),
                      sql<SqlBool>`coalesce(${sql.ref(`${RECORDS}.host`)} = excluded.host, ${sql.ref(`${RECORDS}.host`)} is null)`,
                    ]),
                    eb.and([eb(`${RECORDS}.state`, '=', sql.lit('IN_FLIGHT')), eb(`${RECORDS}.lease_until`, '<=', now)]),
                  ]),
                ),
            )
            .returningAll(),
        )
        .with('event', (db) =>
          db
            .insertInto(EVENTS)
            .columns(['key', 'generation', 'from_state', 'to_state', 'actor', 'detail'])
            .expression((eb) =>
              eb.selectFrom('claimed').select((s) => [
                'claimed.key',
                'claimed.generation',
                // The new row tells where it came from: generation 1 IN_FLIGHT is a fresh insert,
                // a later IN_FLIGHT generation was NOT_EXECUTED, IN_DOUBT here is a lease expiry.
                s
                  .case()
                  .when(s.and([s('claimed.state', '=', sql.lit('IN_FLIGHT')), s('claimed.generation', '=', sql.lit(1))]))
                  .then(sql.lit('UNSEEN'))
                  .when('claimed.state', '=', sql.lit('IN_FLIGHT'))
                  .then(sql.lit('NOT_EXECUTED'))
                  .else(sql.lit('IN_FLIGHT'))
                  .end()
                  .as('from_state'),
                'claimed.state',
                s
                  .case()
                  .when('claimed.state', '=', sql.lit('IN_FLIGHT'))
                  .then(sql<string>`${p.actor}::text`)
                  .else(sql.lit('lease-expiry'))
                  .end()
                  .as('actor'),
                sql<string>`jsonb_build_object('holder', ${p.holder}::text, 'lease_ms', ${p.lease_ms}::int) || ${p.extra}::jsonb`.as(
                  'detail',
                ),
              ]),
            )
            .returning('id'),
        )
        // The intent event comes after the claim event in the trail (ids from one sequence): its
        // condition reads `event`, so Postgres finishes that insert first (an InitPlan).
        .with('intent_event', (db) =>
          db
            .insertInto(EVENTS)
            .columns(['key', 'generation', 'from_state', 'to_state', 'actor', 'detail'])
            .expression((eb) =>
              eb
                .selectFrom('claimed')
                .select([
                  'claimed.key',
                  'claimed.generation',
                  sql.lit('IN_FLIGHT').as('from_state'),
                  'claimed.state',
                  sql<string>`${p.actor}::text`.as('actor'),
                  sql<string>`jsonb_build_object('op', 'intent', 'intent', claimed.intent)`.as('detail'),
                ])
                .where('claimed.state', '=', sql.lit('IN_FLIGHT'))
                .where(sql<boolean>`${p.intent}::jsonb is not null`)
                .where(sql<boolean>`(select count(*) from event) > 0`),
            ),
        )
        .with('proposal', (db) =>
          db
            .insertInto('settle_tool_calls')
            .columns(['trajectory_id', 'turn', 'call_id', 'seq', 'tool', 'valid'])
            .expression(
              db
                .selectNoFrom([
                  sql<string>`${p.trajectory_id}::text`.as('trajectory_id'),
                  sql<number>`${p.turn}::int`.as('turn'),
                  sql<string>`${p.call_id}::text`.as('call_id'),
                  sql.lit(0).as('seq'),
                  sql<string>`${p.tool}::text`.as('tool'),
                  sql.lit(true).as('valid'),
                ])
                .where(sql<boolean>`${p.count_proposal}::int = 1`),
            )
            .onConflict((oc) => oc.columns(['trajectory_id', 'turn', 'call_id', 'seq']).doNothing()),
        )
        .selectFrom('claimed')
        .selectAll(),
    ['key', 'trajectory_id', 'turn', 'call_id', 'tool', 'args', 'lease_ms', 'holder', 'actor', 'extra', 'intent', 'count_proposal', 'host'],
  );
}

export interface RenewParams extends Record<string, string | number | null> {
  key: string;
  generation: number;
  lease_ms: number;
}

/** Extends the live claim's lease. Not an event: it would flood the trail. */
export function renewStatement(db: Kysely<SettleDatabase>) {
  return new PreparedStatement(
    (p: RenewParams) =>
      db
        .updateTable(RECORDS)
        .set({ lease_until: leaseFromNow(p.lease_ms), updated_at: now })
        .where('key', '=', p.key)
        .where('generation', '=', p.generation)
        .where('state', '=', sql.lit('IN_FLIGHT'))
        .returningAll(),
    ['key', 'generation', 'lease_ms'],
  );
}

export interface TransitionParams extends Record<string, string | number | null> {
  key: string;
  generation: number;
  actor: string;
  /** Event detail, JSON text. */
  detail: string;
}

/** The columns a transition writes besides state, lease and timestamps, from its parameters. */
type SetFrom<P> = (p: P) => Record<string, unknown>;

/**
 * One fenced transition as one statement: lock the row only if it is at `generation` in one of
 * `from`, update it to `to`, and append the event with the state it came from.
 */
export function transitionStatement<P extends TransitionParams>(
  db: Kysely<SettleDatabase>,
  spec: {
    from: readonly RecordState[];
    to: RecordState;
    set: SetFrom<P>;
    extraWhere?: Expression<SqlBool>;
    /** Names of P's parameters beyond key, generation, actor, detail. */
    params: readonly (keyof P & string)[];
  },
) {
  return new PreparedStatement(
    (p: P) =>
      db
        .with('old', (db) => {
          let q = db
            .selectFrom(RECORDS)
            .select(['key', 'state'])
            .where('key', '=', p.key)
            .where('generation', '=', p.generation)
            .where(
              'state',
              'in',
              spec.from.map((s) => sql.lit(s)),
            );
          if (spec.extraWhere) q = q.where(spec.extraWhere);
          return q.forUpdate();
        })
        .with('changed', (db) =>
          db
            .updateTable(RECORDS)
            .from('old')
            .set({
              ...spec.set(p),
              state: sql.lit(spec.to),
              // Only IN_FLIGHT carries a lease (a CHECK constraint insists).
              ...(spec.to === 'IN_FLIGHT' ? {} : { lease_until: null }),
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
                  sql<string>`${p.actor}::text`.as('actor'),
                  sql<string>`${p.detail}::jsonb`.as('detail'),
                ]),
            ),
        )
        .selectFrom('changed')
        .selectAll(),
    ['key', 'generation', 'actor', 'detail', ...spec.params] as (keyof P & string)[],
  );
}

export interface SweepParams extends Record<string, string | number | null> {
  /** Only leases that lapsed at least this long ago (database clock): a retried claim usually comes first. */
  grace_ms: number;
  /** At most this many records per statement. */
  limit: number;
  /** Who swept (the worker's identity), recorded on the event. */
  sweeper: string;
}

/**
 * IN_FLIGHT with a lease that lapsed (database clock) → IN_DOUBT, for every such record, whether
 * or not anything claims its key again: the same transition, detail and `lease-expiry` event as
 * the claim's. `FOR UPDATE SKIP LOCKED`: each record is swept by one sweeper, and a row another
 * statement holds (a renewal, a completion, a claim) is left to that statement, which decides; the
 * lock re-checks the condition on the row's latest version, so a renewal that committed first wins.
 */
export function sweepStatement(db: Kysely<SettleDatabase>) {
  return new PreparedStatement(
    (p: SweepParams) =>
      db
        .with('lapsed', (db) =>
          db
            .selectFrom(RECORDS)
            .select(['key', 'holder', 'lease_until'])
            .where('state', '=', sql.lit('IN_FLIGHT'))
            .where('lease_until', '<=', sql<Date>`now() - ${p.grace_ms}::int * interval '1 millisecond'`)
            .orderBy('lease_until')
            .limit(sql<number>`${p.limit}::int`)
            .forUpdate()
            .skipLocked(),
        )
        .with('swept', (db) =>
          db
            .updateTable(RECORDS)
            .from('lapsed')
            .set({
              state: sql.lit('IN_DOUBT'),
              lease_until: null,
              holder: null,
              detail: sql.lit(LAPSED_DETAIL),
              // Its effect became unknown when the lease expired (the holder stopped renewing), not when a sweep noticed:
              // every age (console, CLI, settle_oldest_in_doubt_age_seconds) counts from updated_at.
              updated_at: sql<Date>`lapsed.lease_until`,
            })
            .whereRef(`${RECORDS}.key`, '=', 'lapsed.key')
            .returningAll(RECORDS)
            .returning(sql<string | null>`lapsed.holder`.as('lapsed_holder')),
        )
        .with('event', (db) =>
          db
            .insertInto(EVENTS)
            .columns(['key', 'generation', 'from_state', 'to_state', 'actor', 'detail'])
            .expression((eb) =>
              eb
                .selectFrom('swept')
                .select([
                  'swept.key',
                  'swept.generation',
                  sql.lit('IN_FLIGHT').as('from_state'),
                  'swept.state',
                  sql.lit('lease-expiry').as('actor'),
                  sql<string>`jsonb_build_object('holder', swept.lapsed_holder, 'sweeper', ${p.sweeper}::text)`.as('detail'),
                ]),
            ),
        )
        .selectFrom('swept')
        .selectAll(),
    ['grace_ms', 'limit', 'sweeper'],
  );
}
