/** What a chaos scenario is, what it runs in, and what it reports (every workload alike). */
import type { Cluster } from './cluster';
import type { RecoveryFigures } from './metrics';

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

export interface ScenarioResult {
  scenario: string;
  description: string;
  trajectories: number;
  calls: number;
  effects: number;
  duplicates: number;
  lost: number;
  /** settle said "not executed" but the effect is in the files (scripted trajectories; orchestrated ones re-propose). */
  misreported: number;
  /** IN_DOUBT records of this run left at the end. */
  leftInDoubt: number;
  /** Calls the SRE settled by hand (facts truly unknown to settle), by tool. */
  operator: Record<string, number>;
  faults: Record<string, number>;
  failedTrajectories: number;
  failedTurns: number;
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
