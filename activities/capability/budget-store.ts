/**
 * Capability budgets in Postgres: charge a call once per idempotency key, reserve a sub-agent's
 * budget out of its parent's remaining budget, and return what the sub-agent did not spend.
 * Each operation is one statement; a unique-key conflict means "already done" (a retry).
 */
import { type Kysely, sql } from 'kysely';
import type { SettleDatabase } from '../store/schema';

export type Charge = 'charged' | 'already_charged' | 'exhausted';
export type Reservation = 'reserved' | 'already_reserved' | 'exhausted';

export interface BudgetRow {
  digest: string;
  audience: string;
  parentDigest: string | null;
  budget: number;
  spent: number;
  reserved: number;
  closed: boolean;
}

export class BudgetStore {
  constructor(private readonly db: Kysely<SettleDatabase>) {}

  /** Registers a root token's budget (idempotent). Children are registered by `reserveChild`. */
  async ensure(digest: string, audience: string, budget: number): Promise<void> {
    await sql`insert into settle_capability_budgets (digest, audience, budget) values (${digest}, ${audience}, ${budget})
              on conflict (digest) do nothing`.execute(this.db);
  }

  /** Charges `cost` for the call `key`, once: a retried call with the same key is not charged again. */
  async charge(digest: string, key: string, cost: number): Promise<Charge> {
    try {
      const { rows } = await sql<{ charged: string }>`
        with b as (
          update settle_capability_budgets set spent = spent + ${cost}
          where digest = ${digest} and not closed and spent + reserved + ${cost} <= budget
            and not exists (select 1 from settle_capability_spends where key = ${key})
          returning digest
        ), s as (
          insert into settle_capability_spends (key, digest, cost) select ${key}, digest, ${cost} from b returning key
        )
        select (select count(*) from s) as charged`.execute(this.db);
      if (Number(rows[0]!.charged) === 1) return 'charged';
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err; // a concurrent retry won the insert
    }
    const seen = await sql`select 1 from settle_capability_spends where key = ${key}`.execute(this.db);
    return seen.rows.length ? 'already_charged' : 'exhausted';
  }

  /** Carves a child's budget out of the parent's remaining budget (idempotent per child digest). */
  async reserveChild(parentDigest: string, childDigest: string, childAudience: string, budget: number): Promise<Reservation> {
    try {
      const { rows } = await sql<{ reserved: string }>`
        with p as (
          update settle_capability_budgets set reserved = reserved + ${budget}
          where digest = ${parentDigest} and not closed and spent + reserved + ${budget} <= budget
            and not exists (select 1 from settle_capability_budgets where digest = ${childDigest})
          returning digest
        ), c as (
          insert into settle_capability_budgets (digest, audience, parent_digest, budget)
          select ${childDigest}, ${childAudience}, digest, ${budget} from p returning digest
        )
        select (select count(*) from c) as reserved`.execute(this.db);
      if (Number(rows[0]!.reserved) === 1) return 'reserved';
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err;
    }
    return (await this.get(childDigest)) ? 'already_reserved' : 'exhausted';
  }

  /** Ends a child: its unspent budget returns to the parent, its spend counts there. Idempotent. */
  async closeChild(childDigest: string): Promise<void> {
    await sql`
      with c as (
        update settle_capability_budgets set closed = true
        where digest = ${childDigest} and not closed
        returning parent_digest, budget, spent
      )
      update settle_capability_budgets p set reserved = p.reserved - c.budget, spent = p.spent + c.spent
      from c where p.digest = c.parent_digest`.execute(this.db);
  }

  async get(digest: string): Promise<BudgetRow | undefined> {
    const { rows } = await sql<{
      digest: string;
      audience: string;
      parent_digest: string | null;
      budget: string;
      spent: string;
      reserved: string;
      closed: boolean;
    }>`
      select digest, audience, parent_digest, budget, spent, reserved, closed from settle_capability_budgets where digest = ${digest}`.execute(
      this.db,
    );
    const r = rows[0];
    return (
      r && {
        digest: r.digest,
        audience: r.audience,
        parentDigest: r.parent_digest,
        budget: Number(r.budget),
        spent: Number(r.spent),
        reserved: Number(r.reserved),
        closed: r.closed,
      }
    );
  }
}
