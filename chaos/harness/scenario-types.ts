/**
 * What a chaos scenario is, where it runs and what it reports: shared by the harness's scenario
 * runners (scenario.ts, team-tools.ts, mcp-gateway.ts) and the lanes (lanes.ts).
 */
import type { Lane } from '../../core/tools/lanes';
import type { Cluster, FaultKind } from './cluster';
import type { Replication } from '../infra/replicated-record-store';
import type { RecoveryFigures } from './metrics';

/** How a scenario's tools are placed in each lane (lanes.ts inLane). */
export interface LaneSetup {
  /** Tools it uses that are local by default (declared maxDurationMs ≤ 2 s): moved to `activity` in the activity run. */
  localByDefault: string[];
  /** Tools it uses that are activities by default but short here: moved to `local` in the local run. */
  madeLocal: string[];
  /** What stays in the activity lane in the local run, and why (said in the results). */
  staysActivity?: string;
  /**
   * SETTLE_FAILPOINTS of the local run when the scenario's own would hold a local call past its
   * bound (the tool's declared duration, at most 2 s; the file tools declare 1 s): a slowed call
   * must still fit it, or it measures the activity lane it falls back to.
   */
  localFailpoints?: string;
}

/** One recovery with the lane its call ran in (the tool's lane in this run). */
export interface LaneRecovery {
  lane: Lane;
  /** The caught call's key (to find it in the histories, with --histories). */
  key: string;
  tool: string;
  fault: FaultKind;
  ms: number;
  /** Who settled it: `worker`, `probe`, `operator`. */
  by: string;
}

/** Settled-call attempts by where they ran: local-activity markers and activity tasks of executeToolCall. */
export interface LaneAttempts {
  local: number;
  activity: number;
}

export interface Scenario {
  name: string;
  /** One line: what breaks. */
  description: string;
  workers: number;
  orchestrated: number;
  scripted: number;
  effectsEach: number;
  a3Share?: number;
  /** Start the trajectories evenly over this long (a steady stream) rather than all at once. */
  spreadMs?: number;
  /** SETTLE_FAILPOINTS of every worker. */
  failpoints?: string;
  /** How long a worker paused at a stop failpoint stays paused. */
  pauseMs?: (random: () => number) => number;
  /**
   * Inject faults for at most this long after the workload starts (default: while it runs). Aimed
   * kills on a workload's last few trajectories would otherwise hit exactly those, over and over:
   * a tail that says more about the kill rate than about recovery.
   */
  faultsForMs?: number;
  /** Injects faults until `running()` turns false. */
  faults?: (cluster: Cluster, random: () => number, running: () => boolean) => Promise<void>;
  /**
   * The record store: a PostgreSQL 15 primary and a standby replicated this way, behind PgBouncer
   * in transaction mode (chaos/infra/replicated-record-store.ts); default: one PostgreSQL.
   */
  recordStore?: Replication;
  /**
   * Spread the workers over this many "hosts", each with a disk of its own (ClusterOptions.hosts),
   * and the trajectories' workspaces over their disks; effects are then counted on every disk.
   * Trajectories workload only.
   */
  hosts?: number;
  /**
   * The production topology's Temporal and TLS (ClusterOptions.tls): a Temporal server v1.29.1 on
   * PostgreSQL requiring mTLS, and the record store (`recordStore`) over TLS, verify-full.
   */
  tls?: boolean;
  /** More environment for every worker (e.g. the operator's SETTLE_RECORD_DURABILITY override). */
  workerEnv?: NodeJS.ProcessEnv;
  /** Lease for the trajectories (default: settle's default). */
  leaseMs?: number;
  /** Give up waiting for the workload after this long. */
  timeoutMs: number;
  /**
   * What runs: settle's trajectories of file edits and shell commands (default), or examples/team-tools —
   * a team's own worker, workflow and tools (an HTTP call and a ledger line) through settle's plugin
   * (chaos/harness/team-tools.ts; `orchestrated + scripted` workflows, two calls each) — or MCP calls through
   * `settle mcp serve` gateway processes (chaos/harness/mcp-gateway.ts; `workers` gateways, `orchestrated +
   * scripted` calls, one file edit each).
   */
  workload?: 'trajectories' | 'team-tools' | 'mcp-gateway';
  /** Where its tools run in each lane; without it, both lanes run the tools' defaults. */
  lanes?: LaneSetup;
  /** The lane this run forces (set by lanes.ts inLane; absent: the workers' defaults). */
  lane?: Lane;
  /** SETTLE_LANES of every worker (or gateway) in this run. */
  laneOverrides?: string;
  /** The tools whose settled calls run in the local lane in this run. */
  localTools?: string[];
  /** What stays in the activity lane in a local run, and why. */
  laneNote?: string;
}

export interface ScenarioEnvironment {
  dir: string;
  workflowBundlePath: string;
  /** A pre-built worker entry point (faster starts than tsx). */
  workerEntry?: string;
  /** Share this Temporal server (tests) instead of starting one the scenario may restart. */
  temporalAddress?: string;
  seed: number;
  log: (line: string) => void;
  /** Write every trajectory's history here as JSON (to see where a slow recovery spent its time). */
  historiesDir?: string;
  /** The team-tools workload's worker entry and workflow bundle (built by chaos/run.ts when a scenario needs them). */
  team?: { workerEntry: string; workflowBundlePath: string };
}

export interface HostFigures {
  count: number;
  effectsElsewhere: number;
  claimsElsewhere: number;
}

export interface ScenarioResult {
  scenario: string;
  description: string;
  /** The lane the run forced (absent: the workers' defaults), and what stayed in the other one. */
  lane?: Lane;
  laneNote?: string;
  /** Where the settled calls' attempts ran, from the histories. */
  laneAttempts?: LaneAttempts;
  /** Every recovery, with its fault and the lane of the call it caught (the summary pools them by lane). */
  laneRecoveries?: LaneRecovery[];
  trajectories: number;
  calls: number;
  effects: number;
  duplicates: number;
  lost: number;
  /**
   * With several hosts: how many, the effects found in a copy of a workspace on a host that does
   * not hold it (counted apart, not in `effects` or `duplicates`), and the claims recorded on such
   * a host — each a call run, or probed, away from its evidence.
   */
  hosts?: HostFigures;
  /** settle said "not executed" but the effect is in the files (scripted trajectories; orchestrated ones re-propose). */
  misreported: number;
  /** IN_DOUBT records of this run left at the end. */
  leftInDoubt: number;
  /** The first ten records left IN_DOUBT, with their event trails (what an operator would have to settle, and why). */
  inDoubtTrails?: { key: string; tool: string; trail: string[] }[];
  /** Calls the SRE settled by hand (facts truly unknown to settle), by tool. */
  operator: Record<string, number>;
  faults: Record<string, number>;
  failedTrajectories: number;
  failedTurns: number;
  /** Effects settle answered otherwise than executed or not executed (denied, invalid, …): each a defect of the run. */
  failedCalls?: number;
  unfinished: number;
  /**
   * Recovery of the calls a fault caught in flight: from the fault to the first transition of the
   * caught generation into COMPLETED or NOT_EXECUTED (chaos/harness/metrics.ts). `unsettled`:
   * caught calls whose generation was still unsettled at the end.
   */
  recovery: RecoveryFigures;
  /** Renewal statements (exact, pg_stat_statements) per running call-second; null when not measurable. */
  renewalsPerRunningCallSecond: number | null;
  renewals: { statements: number; runningCallSeconds: number } | null;
  /** Why `renewals` is null, when it is. */
  renewalsNote?: string;
  /** Workflow task failures in the histories, by message (retried by Temporal). */
  workflowTaskFailures: Record<string, number>;
  durationS: number;
  problems: string[];
}
