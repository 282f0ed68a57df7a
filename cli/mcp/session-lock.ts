/**
 * One gateway per session, atomically (docs/mcp.md#one-gateway-per-session): a PostgreSQL advisory
 * lock on the session's task queue, held by a connection of the gateway's own for as long as it
 * serves. Two gateways started at once for one session both pass the poller check (neither polls
 * yet); only one gets the lock. A SIGKILLed gateway's lock ends with its connection, so the
 * gateway started again after it gets it.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { UsageError } from '../usage-error';

export interface SessionLock {
  release(): Promise<void>;
}

export async function lockSession(databaseUrl: string, taskQueue: string, trajectoryId: string): Promise<SessionLock> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000, keepAlive: true });
  // A lost connection loses the lock (the poller check still stands); it never ends the process.
  client.on('error', () => {});
  await client.connect();
  const digest = crypto.createHash('sha256').update(`settle.mcp.session\0${taskQueue}`).digest();
  const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1::int4, $2::int4) as locked', [
    digest.readInt32BE(0),
    digest.readInt32BE(4),
  ]);
  if (rows[0]?.locked !== true) {
    await client.end().catch(() => {});
    throw new UsageError(
      `task queue ${taskQueue}: must have no other gateway (one holds session ${trajectoryId}'s lock in the database): ` +
        'stop it, or start this one with another --trajectory',
    );
  }
  return { release: () => client.end().catch(() => {}) };
}
