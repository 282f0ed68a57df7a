/**
 * One chaos scenario, start to finish: a cluster, a workload of trajectories, faults injected
 * while it runs, the SRE and the approver on duty — then the effects counted from the files and
 * compared with what settle reported.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { openDatabase, useUnnamedStatements } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { SettleClient } from '../../client/index';
import { Cluster, type Fault } from './cluster';
import { countEffects, countEffectsElsewhere } from './effects';
import { claimsElsewhere, StaleCopies, type ClusterHost } from './hosts';
import { recoveries, recoveryFigures, renewalFigures, renewalRate, trailLines, type CallTrail } from './metrics';
import { callTrails, EVIDENCE_DIR, historyFigures, keepEvidence, renewalStatements } from './collect';
import { mulberry32 } from './random';
import type { HostFigures, Scenario, ScenarioEnvironment, ScenarioResult } from './scenario-types';
import { laneEnv, laneFields, runName } from './lanes';
import { Sre } from './sre';
import { runMcpGatewayScenario } from './mcp-gateway';
import { runTeamToolsScenario } from './team-tools';
import { approveWhileRunning, planTrajectories, runTrajectory, type TrajectoryReport } from './workload';

export async function runScenario(scenario: Scenario, env: ScenarioEnvironment): Promise<ScenarioResult> {
  if (scenario.hosts !== undefined && (scenario.workload ?? 'trajectories') !== 'trajectories') {
    throw new Error(`${scenario.name}: hosts: only the trajectories workload runs on several hosts`);
  }
  if (scenario.workload === 'team-tools') return runTeamToolsScenario(scenario, env);
  if (scenario.workload === 'mcp-gateway') return runMcpGatewayScenario(scenario, env);
  const random = mulberry32(env.seed);
  const name = runName(scenario);
  const dir = path.join(env.dir, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const cluster = await Cluster.start({
    dir,
    workers: scenario.workers,
    taskQueue: `chaos-${name}-${env.seed}`,
    env: { ...laneEnv(scenario), ...scenario.workerEnv },
    ...(scenario.recordStore ? { replicated: scenario.recordStore } : {}),
    ...(scenario.hosts !== undefined ? { hosts: scenario.hosts } : {}),
    ...(scenario.tls ? { tls: true } : {}),
    workflowBundlePath: env.workflowBundlePath,
    ...(env.workerEntry ? { workerEntry: env.workerEntry } : {}),
    ...(scenario.failpoints ? { failpoints: scenario.failpoints } : {}),
    ...(env.temporalAddress ? { temporalAddress: env.temporalAddress } : {}),
    pauseMs: () => scenario.pauseMs?.(random) ?? 6_000,
    log: env.log,
  });
  const connection = await cluster.connectTemporal();
  const settle = new SettleClient(new Client({ connection }), `chaos-${name}-${env.seed}`);
  const db = openDatabase(cluster.databaseUrl, { max: 4 });
  // PgBouncer in transaction mode (a replicated record store) shares server sessions.
  if (cluster.replicated) useUnnamedStatements(db);
  const store = new EndpointStore(db);
  try {
    const plans = planTrajectories({
      prefix: `${name}-${env.seed}`,
      dir,
      orchestrated: scenario.orchestrated,
      scripted: scenario.scripted,
      effectsEach: scenario.effectsEach,
      a3Share: scenario.a3Share ?? 0,
      random,
      ...(cluster.hostLayout
        ? { hosts: { root: cluster.hostLayout.workspaceRoot, disks: cluster.hostLayout.hosts.map((h) => h.workspaces) } }
        : {}),
    });
    const deadline = Date.now() + scenario.timeoutMs;
    const sre = new Sre(settle, store, cluster, plans);
    let running = true;
    const spread = scenario.spreadMs ?? 0;
    const workload = Promise.all(
      plans.map(async (p, i) => {
        await new Promise((r) => setTimeout(r, plans.length > 1 ? (spread * i) / (plans.length - 1) : 0));
        return runTrajectory(settle, p, deadline, scenario.leaseMs);
      }),
    ).finally(() => (running = false));
    const stale = cluster.hostLayout ? new StaleCopies(db, plans, cluster.hostLayout.hosts) : null;
    const copying = stale?.watch(() => running) ?? Promise.resolve();
    const faultsUntil = Date.now() + (scenario.faultsForMs ?? Infinity);
    const faulting = (scenario.faults?.(cluster, random, () => running && Date.now() < faultsUntil) ?? Promise.resolve()).catch(
      (err: unknown) => env.log(`${name}: fault injection stopped: ${String(err)}`),
    );
    const duties = Promise.all([sre.watch(workload, env.log), approveWhileRunning(settle, cluster.onDuty.approver, plans, workload)]);
    const progress = setInterval(() => void logProgress(name, store, cluster, plans, env.log), 15_000);
    const reports = await workload.finally(() => clearInterval(progress));
    await faulting;
    await copying;
    cluster.resumeAll();
    await duties;
    // Last look: anything still in doubt whose facts are final is settled by the SRE now.
    await sre.round({ graceMs: 0 }).catch(() => 0);

    const ids = plans.map((p) => p.id);
    for (const report of reports.filter((r) => r.outcome !== 'completed'))
      report.error = `${report.error ?? 'no error'}; ${await keepEvidence(settle, report.id, path.join(EVIDENCE_DIR, name))}`;
    const trails = await callTrails(store, ids);
    const histories = await historyFigures(settle, ids, env.historiesDir);
    const renewals = await renewalStatements(db);
    const hosts = cluster.hostLayout ? await hostFigures(db, plans, cluster.hostLayout.hosts, stale!) : null;
    return summarize(scenario, reports, plans, countEffects(plans), cluster.faults, sre, trails, renewals, started, histories, hosts);
  } finally {
    await connection.close().catch(() => {});
    await db.destroy().catch(() => {});
    await cluster.stop();
  }
}

/** What several hosts add to the counts: effects and claims on a host that does not hold the workspace. */
async function hostFigures(
  db: ReturnType<typeof openDatabase>,
  plans: ReturnType<typeof planTrajectories>,
  hosts: ClusterHost[],
  stale: StaleCopies,
): Promise<{ figures: HostFigures; problems: string[] }> {
  const elsewhere = countEffectsElsewhere(plans);
  const claims = await claimsElsewhere(db, plans, hosts);
  const problems = [
    ...[...elsewhere].map(([uid, n]) => `${uid} happened ${n} time(s) on a host that does not hold its workspace`),
    ...claims,
    ...stale.pinnedElsewhere,
  ];
  return {
    figures: { count: hosts.length, effectsElsewhere: [...elsewhere.values()].reduce((a, b) => a + b, 0), claimsElsewhere: claims.length },
    problems,
  };
}

/** Every 15 s: how far the workload got and what holds it up (for a person watching the run). */
async function logProgress(name: string, store: EndpointStore, cluster: Cluster, plans: { id: string }[], log: (line: string) => void) {
  try {
    const ids = new Set(plans.map((p) => p.id));
    const records = (await store.list({ limit: 100_000 })).filter((r) => ids.has(r.trajectoryId));
    const by = (state: string) => records.filter((r) => r.state === state).length;
    const alive = cluster.workers.filter((w) => w.alive && !w.stopped).length;
    log(
      `${name}: ${records.length} records (${by('COMPLETED')} completed, ${by('IN_FLIGHT')} in flight, ${by('IN_DOUBT')} in doubt, ` +
        `${by('NOT_EXECUTED')} not executed); ${alive}/${cluster.workers.length} workers running; ${cluster.faults.length} faults`,
    );
  } catch {
    log(`${name}: (database unreachable for the progress line)`);
  }
}

function summarize(
  scenario: Scenario,
  reports: TrajectoryReport[],
  plans: ReturnType<typeof planTrajectories>,
  counts: Map<string, number>,
  faults: Fault[],
  sre: Sre,
  trails: CallTrail[],
  renewalCount: number | null,
  started: number,
  { taskFailures, laneAttempts }: Awaited<ReturnType<typeof historyFigures>>,
  hosts: { figures: HostFigures; problems: string[] } | null = null,
): ScenarioResult {
  const problems: string[] = [...(hosts?.problems ?? [])];
  let duplicates = 0;
  let lost = 0;
  let misreported = 0;
  const known = new Set(plans.flatMap((p) => p.effects.map((e) => e.uid)));
  for (const uid of counts.keys()) if (!known.has(uid)) problems.push(`a line nobody proposed: ${uid}`);
  for (const [message, n] of Object.entries(taskFailures)) {
    if (/nondetermin/i.test(message)) problems.push(`${n} workflow task(s) failed: ${message}`);
  }
  for (const report of reports) {
    if (report.outcome !== 'completed') problems.push(`${report.id}: ${report.outcome}${report.error ? ` — ${report.error}` : ''}`);
    for (const effect of report.effects) {
      const n = counts.get(effect.uid) ?? 0;
      if (n > 1) {
        duplicates += n - 1;
        problems.push(`${effect.uid} (${effect.tool}) happened ${n} times (${effect.proposals} proposals, last ${effect.resolution})`);
      }
      if (effect.final === 'completed' && n === 0) {
        lost++;
        problems.push(`${effect.uid} (${effect.tool}) reported ${effect.resolution} but is not in the files`);
      }
      if (effect.final === 'not_executed' && n > 0) {
        misreported++;
        problems.push(`${effect.uid} (${effect.tool}) reported not executed but is in the files`);
      }
      if (effect.final === 'failed') problems.push(`${effect.uid} (${effect.tool}) answered ${effect.resolution}`);
    }
  }
  const inDoubt = trails.filter((t) => t.state === 'IN_DOUBT');
  const recovered = recoveries(faults, trails);
  const operator: Record<string, number> = {};
  for (const a of sre.actions.filter((x) => x.path !== 'none')) operator[a.tool] = (operator[a.tool] ?? 0) + 1;
  const faultCounts: Record<string, number> = {};
  for (const f of faults) {
    const name = f.failpoint ? `${f.kind}@${f.failpoint}` : f.aimedAt ? `${f.kind}@in-flight-call` : f.kind;
    faultCounts[name] = (faultCounts[name] ?? 0) + 1;
    // A record-store fault that caught no call proves nothing: how many it caught is reported.
    if (f.inFlight !== undefined) faultCounts[`${f.kind}: calls in flight`] = (faultCounts[`${f.kind}: calls in flight`] ?? 0) + f.inFlight;
  }
  // pg_stat_statements keeps its counts across a fast shutdown, not across a crash.
  const crashed = faults.some((f) => f.kind === 'postgres-crash');
  const rate = renewalCount === null || crashed ? null : renewalRate(renewalCount, trails, faults);
  const renewalsNote = crashed
    ? 'not measured: PostgreSQL crashes lose the statement counts'
    : renewalCount === null
      ? 'not measured: no renewal statement in pg_stat_statements'
      : undefined;
  return {
    scenario: scenario.name,
    description: scenario.description,
    ...laneFields(scenario, recovered, laneAttempts),
    trajectories: reports.length,
    calls: reports.reduce((n, r) => n + r.calls, 0),
    effects: [...counts.values()].reduce((a, b) => a + b, 0),
    duplicates,
    lost,
    misreported,
    leftInDoubt: inDoubt.length,
    ...(inDoubt.length ? { inDoubtTrails: inDoubt.slice(0, 10).map((t) => ({ key: t.key, tool: t.tool, trail: trailLines(t) })) } : {}),
    ...(hosts ? { hosts: hosts.figures } : {}),
    operator,
    faults: faultCounts,
    failedTrajectories: reports.filter((r) => r.outcome === 'failed').length,
    failedTurns: reports.reduce((n, r) => n + r.failedTurns, 0),
    failedCalls: reports.reduce((n, r) => n + r.effects.filter((e) => e.final === 'failed').length, 0),
    unfinished: reports.filter((r) => r.outcome === 'unfinished').length,
    recovery: recoveryFigures(recovered),
    ...renewalFigures(rate),
    ...(renewalsNote ? { renewalsNote } : {}),
    workflowTaskFailures: taskFailures,
    durationS: Math.round((Date.now() - started) / 1000),
    problems,
  };
}
