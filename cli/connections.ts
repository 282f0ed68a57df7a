/**
 * Where the CLI finds Postgres and Temporal: DATABASE_URL, and Temporal the standard way (an
 * envconfig profile or TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*;
 * see client/connection.ts); else the settings of a running `settle dev`.
 */
import type { EndpointStore } from '../activities/store/endpoint-store';
import type { SettleClient } from '../client/index';
import type { GrpcTrajectoryReads } from '../client/status/grpc-reads';
import { loadTemporalTarget, type TargetOverrides, type TemporalTarget } from '../client/connection';
import { readDevSettings } from './dev-settings';
import { UsageError } from './usage-error';

/** Whether the CLI knows a database (DATABASE_URL, or a running `settle dev`). */
export function databaseConfigured(): boolean {
  return !!(process.env.DATABASE_URL || readDevSettings()?.databaseUrl);
}

/** The database the CLI uses: DATABASE_URL, else a running `settle dev`'s; a usage error naming the variable otherwise. */
export function databaseUrl(why?: string): string {
  const url = process.env.DATABASE_URL || readDevSettings()?.databaseUrl;
  if (!url) {
    throw new UsageError(`DATABASE_URL: must be set (or run \`settle dev\`, whose settings the CLI then finds)${why ? `: ${why}` : ''}`);
  }
  return url;
}

export async function withStore<T>(fn: (store: EndpointStore) => Promise<T>, options: { why?: string } = {}): Promise<T> {
  const url = databaseUrl(options.why);
  // Kysely and pg only for commands that open the database: `settle status` of an answering trajectory does not.
  const { EndpointStore } = await import('../activities/store/endpoint-store');
  const { openDatabase, redactUrl, useUnnamedStatements } = await import('../activities/store/database');
  const db = openDatabase(url, { max: 1 });
  // A command runs each statement a few times: naming them saves nothing, and behind a
  // transaction-mode pooler a name prepared by an earlier command on a shared server session clashes.
  useUnnamedStatements(db);
  try {
    return await fn(new EndpointStore(db));
  } catch (err) {
    // A database nothing has migrated yet: say what to run instead of Postgres's "relation … does not exist".
    if ((err as { code?: unknown }).code === UNDEFINED_TABLE) {
      throw new UsageError(`DATABASE_URL: ${redactUrl(url)} has no settle tables yet: run \`settle migrate\` (workers migrate on start)`);
    }
    throw err;
  } finally {
    await db.destroy();
  }
}

/** Postgres's SQLSTATE for a missing relation. */
const UNDEFINED_TABLE = '42P01';

/**
 * The Temporal target the CLI talks to: the configured one, else a running `settle dev`'s (as
 * overrides of it, for `SettleClient.connect`); a usage error otherwise.
 */
function cliTemporalTarget(): { target: TemporalTarget; overrides: TargetOverrides } {
  const configured = loadTemporalTarget();
  if (configured.addressConfigured) return { target: configured, overrides: {} };
  const dev = readDevSettings();
  if (!dev) {
    throw new UsageError(
      'TEMPORAL_ADDRESS: must be set, or a Temporal profile configured (or run `settle dev`, whose settings the CLI then finds)',
    );
  }
  const overrides = {
    address: dev.temporalAddress,
    namespace: process.env.TEMPORAL_NAMESPACE || dev.namespace,
    taskQueue: process.env.TEMPORAL_TASK_QUEUE || dev.taskQueue,
  };
  return { target: loadTemporalTarget(overrides), overrides };
}

/** `lazy`: connect at the first call, so the command starts while Temporal is unreachable (the console). */
export async function withClient<T>(fn: (client: SettleClient) => Promise<T>, options: { lazy?: boolean } = {}): Promise<T> {
  const { overrides } = cliTemporalTarget();
  // Temporal's client only for commands that start, update or settle: `settle status` reads without it.
  const { SettleClient } = await import('../client/index');
  const client = options.lazy ? SettleClient.lazy(overrides) : await SettleClient.connect(overrides);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** The status report's reads over the CLI's lean gRPC reader (client/status/grpc-reads.ts): no Temporal client to load. */
export async function withStatusReads<T>(fn: (reads: GrpcTrajectoryReads) => Promise<T>): Promise<T> {
  const { target } = cliTemporalTarget();
  const { GrpcTrajectoryReads } = await import('../client/status/grpc-reads');
  const reads = new GrpcTrajectoryReads(target);
  try {
    return await fn(reads);
  } finally {
    reads.close();
  }
}
