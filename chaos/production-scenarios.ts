/**
 * `npm run chaos -- --production`: the topology settle is deployed on (docs/deploying.md) — the
 * record store a PostgreSQL 15 primary with a streaming standby behind PgBouncer in transaction
 * mode, the workers on two "hosts" that do not share a disk (chaos/harness/hosts.ts) — and its
 * faults: the primary failed over (synchronous and asynchronous replication), the pooler
 * restarted, a host's death, a rolling deploy — on a Temporal server on PostgreSQL over mTLS, the
 * record store over TLS (onProductionTopology; `--plain` leaves both out).
 */
import type { Cluster } from './harness/cluster';
import type { ClusterHost } from './harness/hosts';
import type { Scenario } from './harness/scenario-types';
import {
  failoverAsync,
  failoverSync,
  full,
  LANES,
  onProductionTopology,
  pause,
  poolerRestart,
  SLOW_CALLS,
  type Size,
} from './record-store-scenarios';
import { rollingDeploy } from './scenarios';

type FaultLoop = NonNullable<Scenario['faults']>;

/** Two hosts, two workers each: a host's death takes several worker processes with it. */
const twoByTwo: Size = { ...full, workers: 4 };

/** Waits (at most `ms`) until some host's workers hold calls IN_FLIGHT; returns those hosts. */
async function hostsBusy(cluster: Cluster, running: () => boolean, ms = 30_000): Promise<ClusterHost[]> {
  const deadline = Date.now() + ms;
  while (running() && Date.now() < deadline) {
    const busy = [...(await cluster.hostsWithCallsInFlight()).keys()];
    if (busy.length > 0) return busy;
    await pause(100, running);
  }
  return [];
}

/**
 * A host dies every `everyMs`, chosen among the hosts whose workers hold calls IN_FLIGHT at that
 * moment, down `downMs` … 2 × `downMs`, then back on the same disk. The first death comes once
 * each of the `trajectories` has its workspace's host recorded (a claim there): a trajectory whose
 * first workspace call comes while its host is down waits for it, up to 3 minutes, then has its
 * calls refused (docs/deploying.md#workers-on-several-hosts): not what this fault measures.
 */
const hostDeaths =
  (trajectories: number, everyMs: number, downMs: number): FaultLoop =>
  async (cluster, random, running) => {
    while (running() && (await cluster.trajectoriesPinned().catch(() => 0)) < trajectories) await pause(250, running);
    while (running()) {
      const busy = await hostsBusy(cluster, running);
      const host = busy[Math.floor(random() * busy.length)];
      if (!running() || !host) continue;
      await cluster.killHost(host, downMs * (1 + random()));
      await pause(everyMs * (0.8 + random() * 0.4), running);
    }
  };

/**
 * A host's death: every worker process of one host (and every command they started) SIGKILLed at
 * once while its calls are in flight, the host back 3–6 s later with as many workers, on the same
 * disk. Its calls must wait for it — never run or be probed on the other host, whose disk has a
 * stale copy of each of its workspaces.
 */
export function hostDeath(size: Size, everyMs: number, faultsForMs: number): Scenario {
  return {
    name: 'host-death',
    description: `two hosts (mount namespaces, each its own disk at the workspace root and SETTLE_RUNS_DIR; a stale copy of every workspace on the other); every ~${everyMs / 1000} s for the first ${faultsForMs / 1000} s, once every workspace is pinned to its host, every process of a host holding calls in flight SIGKILLed at once, back 3–6 s later on the same disk; calls slowed to be caught; record store a synchronous standby behind PgBouncer`,
    ...size,
    hosts: 2,
    recordStore: 'sync',
    failpoints: SLOW_CALLS,
    lanes: LANES,
    faults: hostDeaths(size.orchestrated + size.scripted, everyMs, 3_000),
    faultsForMs,
  };
}

/** The rolling deploy of chaos/scenarios.ts, on two hosts and the replicated record store. */
function rollingDeployOnHosts(size: Size, faultsForMs: number): Scenario {
  const scenario = rollingDeploy(size, faultsForMs);
  return {
    ...scenario,
    hosts: 2,
    description: `${scenario.description}; two hosts, each worker replaced on its own host; record store a synchronous standby behind PgBouncer`,
    recordStore: 'sync',
  };
}

const onTwoHosts = (scenario: Scenario): Scenario => ({ ...scenario, hosts: 2, description: `${scenario.description}; two hosts` });

/**
 * On the Temporal dev server in plaintext (`--production --plain`): a failover every ~25 s, the pooler every 5–10 s, a host's death every ~20 s, deploy after deploy; over a minute's stream of trajectories.
 */
export const PRODUCTION_PLAIN: Scenario[] = [
  onTwoHosts(failoverSync(full, 25_000)),
  onTwoHosts(failoverAsync(full, 25_000)),
  onTwoHosts(poolerRestart(full)),
  // Started over 20 s, since host deaths begin once every trajectory's workspace is pinned to its
  // host; twice the effects of the others, so that the work outlasts several deaths.
  hostDeath({ ...twoByTwo, spreadMs: 20_000, effectsEach: 12 }, 20_000, 3 * 60_000),
  rollingDeployOnHosts(twoByTwo, 2 * 60_000),
];

/** `npm run chaos -- --production`: the same on a Temporal server on PostgreSQL over mTLS, the record store over TLS. */
export const PRODUCTION: Scenario[] = PRODUCTION_PLAIN.map(onProductionTopology);
