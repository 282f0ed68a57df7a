/**
 * An event is stamped when it is written, not when its transaction began: a write that waited
 * (for a row lock, here for a sleep) inside its transaction is stamped after the wait, so a trail
 * never shows COMPLETED before the IN_DOUBT it follows. Real PostgreSQL.
 */
import crypto from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { openTestDb, testStore, uniqueId } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

describe('the event trail’s times', () => {
  it('stamp each event when it is written, after whatever its transaction waited for', async () => {
    const key = crypto.randomBytes(32).toString('hex');
    const trajectoryId = uniqueId('event-time');
    await store.claim({ key, trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args: {} }, { leaseMs: 60_000, holder: 'A' });
    const began = await db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ began: Date }>`SELECT now() AS began`.execute(trx);
      await sql`SELECT pg_sleep(0.3)`.execute(trx);
      const written = await new EndpointStore(trx).markInDoubt(key, 1, 'test: effect unknown', 'worker:A');
      expect(written.ok).toBe(true);
      return rows[0]!.began;
    });
    const inDoubt = (await store.events(key)).at(-1)!;
    expect(inDoubt.toState).toBe('IN_DOUBT');
    expect(inDoubt.at.getTime() - began.getTime()).toBeGreaterThanOrEqual(300);
  });
});
