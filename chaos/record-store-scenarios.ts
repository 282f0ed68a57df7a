/**
 * The record store as production runs it (docs/deploying.md#record-store-failover): a PostgreSQL
 * 15 primary with a streaming standby behind PgBouncer in transaction mode, failed over and its
 * pooler restarted while calls are in flight. `npm run chaos -- --production` runs them
 * (chaos/production-scenarios.ts PRODUCTION) on the production topology's Temporal and TLS
 * (onProductionTopology); test/chaos/record-store-failover.test.ts runs the small sizes without
 * them, test/production/record-store-failover-tls.test.ts the synchronous failover with them.
 */
import { sleep, type Cluster } from './harness/cluster';
import type { LaneSetup, Scenario } from './harness/scenario-types';

type FaultLoop = NonNullable<Scenario['faults']>;
export type Size = Pick<Scenario, 'workers' | 'orchestrated' | 'scripted' | 'effectsEach' | 'spreadMs' | 'timeoutMs'>;

/** Replication lag at the primary's death: its WAL sender paused this long first (ReplicatedRecordStore.failOver). */
export const FAILOVER_LAG_MS = 1_000;

/**
 * Calls slowed as in worker-sigkill (chaos/scenarios.ts), so that a fault catches them in every
 * phase: claimed and not yet changed, changed and not yet recorded.
 */
export const SLOW_CALLS =
  'file_edit.before_rename=sleep:1000@0.6,file_edit.after_rename=sleep:1000@0.6,bash_execute.after_run=sleep:1000@0.6';
export const LANES: LaneSetup = {
  localByDefault: ['file_edit', 'file_view'],
  madeLocal: [],
  staysActivity: 'bash_execute (a shell command has no short bound)',
  localFailpoints: 'file_edit.before_rename=sleep:300@0.6,file_edit.after_rename=sleep:300@0.6,bash_execute.after_run=sleep:1000@0.6',
};

/** Sleeps `ms`, or less if the fault window closes first (the run waits for its fault loop to end). */
export async function pause(ms: number, running: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (running() && Date.now() < until) await sleep(Math.min(250, until - Date.now()));
}

/** Waits (at most `ms`) until some call is IN_FLIGHT: a fault that catches none measures nothing. */
export async function untilCallsInFlight(cluster: Cluster, running: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (running() && Date.now() < deadline && (await cluster.inFlightCount()) === 0) await sleep(100);
}

/** A failover every `everyMs` (the first after `firstMs`), each struck while calls are in flight. */
const failovers =
  (firstMs: number, everyMs: number): FaultLoop =>
  async (cluster, random, running) => {
    await pause(firstMs, running);
    while (running()) {
      await untilCallsInFlight(cluster, running);
      if (!running()) return;
      await cluster.failOver(FAILOVER_LAG_MS);
      await pause(everyMs * (0.8 + random() * 0.4), running);
    }
  };

/** PgBouncer SIGKILLed while calls are in flight, back 0.5–1.5 s later, every 5–10 s. */
const poolerRestarts: FaultLoop = async (cluster, random, running) => {
  await pause(3_000, running);
  while (running()) {
    await untilCallsInFlight(cluster, running);
    if (!running()) return;
    await cluster.restartPooler(500 + random() * 1_000);
    await pause(5_000 + random() * 5_000, running);
  }
};

const FAILOVER = `primary SIGKILLed ${FAILOVER_LAG_MS / 1000} s after its WAL sender paused, while calls are in flight; standby promoted (pg_ctl promote), PgBouncer re-pointed (RELOAD), a new standby cloned`;

export function failoverSync(size: Size, everyMs: number): Scenario {
  return {
    name: 'record-store-failover-sync',
    description: `synchronous standby (synchronous_standby_names, synchronous_commit = on) behind PgBouncer (transaction mode); ${FAILOVER}`,
    ...size,
    recordStore: 'sync',
    failpoints: SLOW_CALLS,
    lanes: LANES,
    faults: failovers(4_000, everyMs),
  };
}

/**
 * The same with asynchronous replication: the workers refuse it at start (the default), so the
 * operator's override is set, and what the failover loses is counted.
 */
export function failoverAsync(size: Size, everyMs: number): Scenario {
  return {
    ...failoverSync(size, everyMs),
    name: 'record-store-failover-async',
    description: `ASYNCHRONOUS standby (SETTLE_RECORD_DURABILITY=local: the operator accepted it) behind PgBouncer (transaction mode); ${FAILOVER}`,
    recordStore: 'async',
    workerEnv: { SETTLE_RECORD_DURABILITY: 'local' },
  };
}

export function poolerRestart(size: Size): Scenario {
  return {
    name: 'pooler-restart',
    description:
      'PgBouncer (transaction mode, in front of a synchronously replicated primary) SIGKILLed while calls are in flight, back 0.5–1.5 s later, every 5–10 s',
    ...size,
    recordStore: 'sync',
    failpoints: SLOW_CALLS,
    lanes: LANES,
    faults: poolerRestarts,
  };
}

/** How onProductionTopology's scenarios describe what they run on. */
export const PRODUCTION_TOPOLOGY =
  'Temporal server v1.29.1 on PostgreSQL, mTLS required on its frontend (workers connect with TEMPORAL_TLS_*); record store over TLS, sslmode=verify-full to PgBouncer, PgBouncer verify-full to the primary';

/**
 * The scenario on the production topology's Temporal and TLS (ClusterOptions.tls) rather than the
 * Temporal dev server in plaintext; its record store stays as the scenario has it.
 */
export function onProductionTopology(scenario: Scenario): Scenario {
  return { ...scenario, tls: true, description: `${PRODUCTION_TOPOLOGY}; ${scenario.description}` };
}

/** The production lane's size: a minute's stream of trajectories. */
export const full: Size = { workers: 3, orchestrated: 16, scripted: 16, effectsEach: 6, spreadMs: 60_000, timeoutMs: 8 * 60_000 };
