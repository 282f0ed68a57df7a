/**
 * The chaos scenarios: what breaks, how often, under how much work. `full` is `npm run chaos`,
 * `quick` is `npm run chaos -- --quick` (a short fixed set).
 */
import { sleep, type Cluster } from './harness/cluster';
import type { LaneSetup, Scenario } from './harness/scenario-types';

type FaultLoop = NonNullable<Scenario['faults']>;

/**
 * SIGKILL every `minMs`–`maxMs` (the victim replaced at once, as a supervisor would), aimed at a
 * running call: when calls are IN_FLIGHT on live workers, one of them is picked at random and
 * the worker holding its lease is killed; otherwise a random worker. A kill at a random instant
 * rarely lands in a call (most of a worker's time is spent between calls), and a kill that
 * catches no call says nothing about recovery.
 */
const sigkills =
  (minMs: number, maxMs: number): FaultLoop =>
  async (cluster, random, running) => {
    while (running()) {
      await sleep(minMs + random() * (maxMs - minMs));
      if (running()) await cluster.killWorkerHoldingCall(random);
    }
  };

/**
 * Calls that last long enough for a fault to catch them in every phase: most file edits pause
 * 1 s with the new content written to a temporary file (nothing changed yet) and/or 1 s after the
 * rename (changed, not yet recorded); most shell commands pause 1 s after their exit marker (run,
 * not yet recorded), besides the commands that sleep 1 s themselves (killed while running: truly
 * unknown, for the operator). A slow disk or a busy host, as it were.
 */
const SLOW_CALLS = [
  'file_edit.before_rename=sleep:1000@0.6',
  'file_edit.after_rename=sleep:1000@0.6',
  'bash_execute.after_run=sleep:1000@0.6',
].join(',');

/**
 * SLOW_CALLS within the local lane's bound (1 s, file_edit's declared duration): an edit paused at
 * both points for 1 s each would outlive it and go on in the activity lane, measuring that lane;
 * paused 300 ms at each it still fits, with room left for the edit itself.
 */
const SLOW_LOCAL_CALLS = [
  'file_edit.before_rename=sleep:300@0.6',
  'file_edit.after_rename=sleep:300@0.6',
  'bash_execute.after_run=sleep:1000@0.6',
].join(',');

/**
 * The trajectories' tools in each lane: file_edit and file_view declare 1 s (local by default),
 * bash_execute none — a shell command has no short bound, so it stays an activity in both.
 */
const TRAJECTORY_LANES: LaneSetup = {
  localByDefault: ['file_edit', 'file_view'],
  madeLocal: [],
  staysActivity: 'bash_execute (a shell command has no short bound)',
};
const SLOWED_TRAJECTORY_LANES: LaneSetup = { ...TRAJECTORY_LANES, localFailpoints: SLOW_LOCAL_CALLS };

const WORKER_SIGKILL =
  'SIGKILL every 2–5 s of the worker holding a random in-flight call (a random worker when none is); file edits and half the commands slowed to be caught';

/** PostgreSQL down for 1–3 s every 4–8 s: fast shutdown (57P01) or kill -9 of postmaster and backends. */
const postgresRestarts =
  (mode: 'fast' | 'crash'): FaultLoop =>
  async (cluster, random, running) => {
    await sleep(2_000);
    while (running()) {
      await cluster.restartPostgres(mode, 1_000 + random() * 2_000);
      await sleep(4_000 + random() * 4_000);
    }
  };

/** The Temporal dev server stopped and started on its SQLite file every 6–10 s. */
const temporalRestarts: FaultLoop = async (cluster: Cluster, random, running) => {
  await sleep(3_000);
  while (running()) {
    await cluster.restartTemporal(500 + random() * 1_000);
    await sleep(6_000 + random() * 4_000);
  }
};

/**
 * Rolling deploys, over and over (chaos/harness/cluster.ts rollingReplace): every worker, one at a
 * time, drained with SIGTERM and replaced by a worker of the next build (SETTLE_BUILD_ID), which
 * polls before the next one is drained; 2–4 s between deploys. Histories begun on one build go on
 * on the next: a workflow task the new build could not replay would fail (workflowTaskFailures)
 * and leave its trajectory unfinished.
 */
export const rollingDeploys: FaultLoop = async (cluster, random, running) => {
  for (let build = 2; running(); build++) {
    await sleep(2_000 + random() * 2_000);
    if (running()) await cluster.rollingReplace({ SETTLE_BUILD_ID: `settle-chaos-build-${build}` }, running);
  }
};

/** Some calls left in doubt: a worker kills itself right after starting a command (5 %), whose effect is then unknown. */
const IN_DOUBT_COMMANDS = 'bash_execute.after_start=kill@0.05';

export const rollingDeploy = (
  size: Pick<Scenario, 'workers' | 'orchestrated' | 'scripted' | 'effectsEach' | 'spreadMs' | 'timeoutMs'>,
  faultsForMs: number,
): Scenario => ({
  name: 'rolling-deploy',
  description: `every worker drained (SIGTERM) and replaced by one of a new build id, one at a time, deploy after deploy for the first ${faultsForMs / 1000} s; calls slowed to be caught in flight, and a worker kills itself after 5 % of command starts (in doubt)`,
  ...size,
  failpoints: `${SLOW_CALLS},${IN_DOUBT_COMMANDS}`,
  lanes: { ...TRAJECTORY_LANES, localFailpoints: `${SLOW_LOCAL_CALLS},${IN_DOUBT_COMMANDS}` },
  faults: rollingDeploys,
  faultsForMs,
});

/** Paused past the lease (3 s): 4.5–9 s, then resumed. */
const pastTheLease = (random: () => number) => 4_500 + random() * 4_500;

const FAILPOINTS = [
  'settled.before_intent',
  'settled.after_claim',
  'file_edit.before_rename',
  'file_edit.after_lease_check',
  'file_edit.after_rename',
  'bash_execute.after_lease_check',
  'bash_execute.after_start',
  'bash_execute.after_run',
];

/**
 * A team's own tools (examples/team-tools: create_invoice over HTTP with settle's key as its
 * Idempotency-Key, append_ledger_line on disk) from its own workflow, its worker SIGKILLed as in
 * worker-sigkill. Half the calls pause 1 s after their claim (nothing done yet) and half 1 s after
 * their effect (done, not yet recorded), to be caught in either phase. Two calls a workflow, short
 * ones: twice the workflows of the other scenarios (`orchestrated + scripted` of them).
 */
const teamTools = (
  size: { workers: number; orchestrated: number; scripted: number; spreadMs?: number; timeoutMs: number },
  faultsForMs: number,
): Scenario => ({
  name: 'team-tools-sigkill',
  description: `examples/team-tools' own workflow and tools (an invoice at an HTTP service, a ledger line on disk), two calls a workflow; ${WORKER_SIGKILL.replace('file edits and half the commands slowed', 'half the calls slowed before and after their effect')}; kills for the first ${faultsForMs / 1000} s`,
  workload: 'team-tools',
  ...size,
  effectsEach: 2,
  failpoints: 'settled.after_claim=sleep:1000@0.5,settled.after_execute=sleep:1000@0.5',
  faults: sigkills(2_000, 5_000),
  faultsForMs,
  // The ledger line is a short write on disk: moved to the local lane (within its bound, paused
  // 600 ms at most twice). create_invoice is an HTTP call to the billing service: no short bound.
  lanes: {
    localByDefault: [],
    madeLocal: ['append_ledger_line'],
    staysActivity: 'create_invoice (an HTTP call to the billing service)',
    localFailpoints: 'settled.after_claim=sleep:600@0.5,settled.after_execute=sleep:600@0.5',
  },
});

/**
 * MCP calls through the gateway: an SDK client calls the reference filesystem server's edit_file
 * through `settle mcp serve --http` processes (`workers` of them, each in front of its own
 * instance of the server, all named `files`, each in its own session), and the gateway holding a
 * running call is SIGKILLed with its upstream every 2–5 s and started again in its session; the
 * client sends a call whose gateway died again, with the same call id, to the same gateway. Half
 * the calls pause 1 s before the upstream call and half 1 s after it, to be caught in either phase.
 */
const mcpGateway = (
  size: { workers: number; orchestrated: number; scripted: number; spreadMs?: number; timeoutMs: number },
  faultsForMs: number,
): Scenario => ({
  name: 'mcp-gateway-sigkill',
  description: `an MCP client's edit_file calls through settle mcp serve gateways, each in front of its own instance of @modelcontextprotocol/server-filesystem (one server name); SIGKILL every 2–5 s of the gateway (and its upstream) holding a random in-flight call, restarted at once in its session; calls resent with the same call id to their gateway; kills for the first ${faultsForMs / 1000} s`,
  workload: 'mcp-gateway',
  ...size,
  effectsEach: 1,
  failpoints: 'mcp.before_call=sleep:1000@0.5,mcp.after_call=sleep:1000@0.5',
  faultsForMs,
  // edit_file is the upstream's call through a child process's stdio: no short bound, and the
  // gateway's session workflow keeps the default workflow task timeout (10 s). Both runs are the
  // activity lane's.
  lanes: {
    localByDefault: [],
    madeLocal: [],
    staysActivity: "edit_file (an MCP upstream call; the gateway's session workflow keeps the 10 s default task timeout)",
  },
});

const workload = { workers: 3, orchestrated: 16, scripted: 16, effectsEach: 6, timeoutMs: 8 * 60_000 };
/**
 * The quick set: a steady stream of trajectories, started evenly over 30 s, so that each fault
 * loop (kills every 2–5 s, PostgreSQL every 5–11 s, Temporal every 7–12 s, zombies at every
 * fourth lease check) meets running calls several times — about a minute a scenario on a quiet
 * machine. The timeout only matters when something hangs.
 */
const small = { workers: 3, orchestrated: 6, scripted: 6, effectsEach: 4, spreadMs: 30_000, timeoutMs: 5 * 60_000 };

/**
 * Each crossing of a listed failpoint pauses its worker with this probability. In the full set
 * every attempt crosses two points, and a pause holds the worker 4.5–9 s: at 0.15 (28 % of
 * attempts paused) all three workers were paused most of the time and zombie-before-intent
 * finished none of its 32 trajectories in 8 minutes (0 duplicates, 0 lost); 0.03 pauses about one
 * attempt in 17.
 */
function zombies(name: string, description: string, points: string[], size = workload, probability = 0.03): Scenario {
  return {
    name,
    description,
    ...size,
    failpoints: points.map((p) => `${p}=stop@${probability}`).join(','),
    pauseMs: pastTheLease,
    lanes: TRAJECTORY_LANES,
  };
}

export const FULL: Scenario[] = [
  {
    name: 'worker-sigkill',
    description: `${WORKER_SIGKILL}; kills for the first 3 min`,
    ...workload,
    failpoints: SLOW_CALLS,
    lanes: SLOWED_TRAJECTORY_LANES,
    faults: sigkills(2_000, 5_000),
    faultsForMs: 3 * 60_000,
  },
  zombies('zombie-before-intent', 'a worker paused (SIGSTOP) past its lease before the claim that records the intent, or right after it', [
    'settled.before_intent',
    'settled.after_claim',
  ]),
  zombies('zombie-after-lease-check', 'paused past the lease between the lease check and the effect', [
    'file_edit.after_lease_check',
    'bash_execute.after_lease_check',
  ]),
  zombies('zombie-during-effect', 'paused past the lease during the effect: edit prepared, not renamed; command running', [
    'file_edit.before_rename',
    'bash_execute.after_start',
  ]),
  zombies('zombie-after-effect', 'paused past the lease after the effect, before it is recorded', [
    'file_edit.after_rename',
    'bash_execute.after_run',
  ]),
  {
    name: 'failpoint-kills',
    description: 'a worker kills itself at every failpoint (5 % each), half the trajectories A3 (approved)',
    ...workload,
    a3Share: 0.5,
    failpoints: FAILPOINTS.map((p) => `${p}=kill@0.05`).join(','),
    lanes: TRAJECTORY_LANES,
  },
  {
    name: 'postgres-fast-restart',
    description: 'PostgreSQL fast shutdown, down 1–3 s, every 4–8 s',
    ...workload,
    lanes: TRAJECTORY_LANES,
    faults: postgresRestarts('fast'),
  },
  {
    name: 'postgres-crash',
    description: 'PostgreSQL kill -9 (postmaster and backends), down 1–3 s, every 4–8 s',
    ...workload,
    lanes: TRAJECTORY_LANES,
    faults: postgresRestarts('crash'),
  },
  {
    name: 'temporal-restart',
    description: 'Temporal dev server restarted on its SQLite file every 6–10 s',
    ...workload,
    lanes: TRAJECTORY_LANES,
    faults: temporalRestarts,
  },
  teamTools({ ...workload, orchestrated: 32, scripted: 32 }, 3 * 60_000),
  mcpGateway({ workers: 2, orchestrated: 32, scripted: 32, spreadMs: 60_000, timeoutMs: 8 * 60_000 }, 2 * 60_000),
  rollingDeploy({ ...workload, spreadMs: 60_000 }, 2 * 60_000),
];

export const QUICK: Scenario[] = [
  {
    name: 'worker-sigkill',
    description: `${WORKER_SIGKILL}; kills for the first 40 s; half the trajectories A3 (approved)`,
    ...small,
    faultsForMs: 40_000,
    // Approvals under kills: the approver must not wait on a trajectory whose worker just died.
    a3Share: 0.5,
    failpoints: SLOW_CALLS,
    lanes: SLOWED_TRAJECTORY_LANES,
    faults: sigkills(2_000, 5_000),
  },
  zombies(
    'zombie-after-lease-check',
    'paused past the lease between the lease check and the effect',
    ['file_edit.after_lease_check', 'bash_execute.after_lease_check'],
    small,
    0.25,
  ),
  // Calls slowed as in worker-sigkill, so that the restarts catch calls in flight.
  {
    name: 'postgres-crash',
    description: 'PostgreSQL kill -9, down 1–3 s, every 4–8 s; calls slowed to be caught',
    ...small,
    failpoints: SLOW_CALLS,
    lanes: SLOWED_TRAJECTORY_LANES,
    faults: postgresRestarts('crash'),
  },
  {
    name: 'temporal-restart',
    description: 'Temporal dev server restarted on its SQLite file every 6–10 s; calls slowed to be caught',
    ...small,
    failpoints: SLOW_CALLS,
    lanes: SLOWED_TRAJECTORY_LANES,
    faults: temporalRestarts,
  },
  teamTools({ ...small, orchestrated: 12, scripted: 12 }, 40_000),
  mcpGateway({ workers: 2, orchestrated: 9, scripted: 9, spreadMs: 30_000, timeoutMs: 5 * 60_000 }, 40_000),
  rollingDeploy(small, 60_000),
];
