/**
 * The local stack: a real Temporal dev server and a real PostgreSQL (migrated), started
 * together and stopped together. Used by the demo, the tests and `settle dev`.
 */
import path from 'node:path';
import { startPostgres, type PostgresHandle, type StartPostgresOptions } from './postgres';
import { startTemporal, type StartTemporalOptions, type TemporalHandle } from './temporal';
import { SETTLE_DIR } from './paths';

export interface Stack {
  temporal: TemporalHandle;
  postgres: PostgresHandle;
  databaseUrl: string;
  /**
   * Stops everything this stack started, Temporal first and PostgreSQL last (whatever still
   * finishes a call writes its record there); safe to call twice. Stop the workers before.
   */
  stop(): Promise<void>;
}

export interface StartStackOptions {
  /** Keep Temporal history in `.settle/temporal.db` and Postgres data between runs. */
  persistent?: boolean;
  postgres?: StartPostgresOptions;
  /** Temporal dev server settings, e.g. `dynamicConfig` (default: the low-latency values). */
  temporal?: Pick<StartTemporalOptions, 'dynamicConfig'>;
  log?: (line: string) => void;
}

export async function startStack(options: StartStackOptions = {}): Promise<Stack> {
  const log = options.log ?? (() => {});
  const [postgres, temporal] = await settleBoth(
    startPostgres({ log, ...options.postgres }),
    startTemporal({ log, ...options.temporal, ...(options.persistent ? { dbFile: path.join(SETTLE_DIR, 'temporal.db') } : {}) }),
  );
  let stopped: Promise<void> | undefined;
  return {
    temporal,
    postgres,
    databaseUrl: postgres.url,
    stop: () =>
      (stopped ??= (async () => {
        try {
          await temporal.stop();
        } finally {
          await postgres.stop();
        }
      })()),
  };
}

/** Starts both; if one fails, stops the other before rethrowing, so nothing is left running. */
async function settleBoth(pg: Promise<PostgresHandle>, temporal: Promise<TemporalHandle>): Promise<[PostgresHandle, TemporalHandle]> {
  const [a, b] = await Promise.allSettled([pg, temporal]);
  if (a.status === 'fulfilled' && b.status === 'fulfilled') return [a.value, b.value];
  if (a.status === 'fulfilled') await a.value.stop().catch(() => {});
  if (b.status === 'fulfilled') await b.value.stop().catch(() => {});
  throw a.status === 'rejected' ? a.reason : (b as PromiseRejectedResult).reason;
}
