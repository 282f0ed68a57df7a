/**
 * One chaos scenario, start to finish: a cluster, a workload of trajectories, faults injected
 * while it runs, the SRE and the approver on duty — then the effects counted from the files and
 * compared with what settle reported.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { Client, Connection } from '@temporalio/client';
import { openDatabase } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { renewStatement } from '../../activities/store/statements';
import { SettleClient } from '../../client/index';
import { Cluster, type Fault } from './cluster';
import { countEffects } from './effects';
import { recoveries, renewalRate, stats, type CallTrail, type Recovery } from './metrics';
import type { LaneAttempts, Scenario, ScenarioEnvironment, ScenarioResult } from './scenario-types';
import { countLaneAttempts, laneEnv, laneFields, runName } from './lanes';
import { Sre } from './sre';
import { runMcpGatewayScenario } from './mcp-gateway';
import { runTeamToolsScenario } from './team-tools';
import { approveWhileRunning, planTrajectories, runTrajectory, type TrajectoryReport } from './workload';

export type { Scenario, ScenarioEnvironment, ScenarioResult } from './scenario-types';
export { stats, type Stats } from './metrics';

export async function runScenario(scenario: Scenario, env: ScenarioEnvironment): Promise<ScenarioResult> {
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
    env: laneEnv(scenario),
    workflowBundlePath: env.workflowBundlePath,
    ...(env.workerEntry ? { workerEntry: env.workerEntry } : {}),
    ...(scenario.failpoints ? { failpoints: scenario.failpoints } : {}),
    ...(env.temporalAddress ? { temporalAddress: env.temporalAddress } : {}),
    pauseMs: () => scenario.pauseMs?.(random) ?? 6_000,
    log: env.log,
  });
  const connection = await Connection.connect({ address: cluster.temporalAddress });
  const settle = new SettleClient(new Client({ connection }), `chaos-${name}-${env.seed}`);
  const db = openDatabase(cluster.databaseUrl, { max: 4 });
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
    const faultsUntil = Date.now() + (scenario.faultsForMs ?? Infinity);
    const faulting = (scenario.faults?.(cluster, random, () => running && Date.now() < faultsUntil) ?? Promise.resolve()).catch(
      (err: unknown) => env.log(`${name}: fault injection stopped: ${String(err)}`),
    );
    const duties = Promise.all([sre.watch(workload, env.log), approveWhileRunning(settle, cluster.onDuty.approver, plans, workload)]);
    const progress = setInterval(() => void logProgress(name, store, cluster, plans, env.log), 15_000);
    const reports = await workload.finally(() => clearInterval(progress));
    await faulting;
    cluster.resumeAll();
    await duties;
    // Last look: anything still in doubt whose facts are final is settled by the SRE now.
    await sre.round({ graceMs: 0 }).catch(() => 0);

    const ids = plans.map((p) => p.id);
    const trails = await callTrails(store, ids);
    const histories = await historyFigures(settle, ids, env.historiesDir);
    const renewals = await renewalStatements(db);
    return summarize(scenario, reports, plans, countEffects(plans), cluster.faults, sre, trails, renewals, started, histories);
  } finally {
    await connection.close().catch(() => {});
    await db.destroy().catch(() => {});
    await cluster.stop();
  }
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

export async function callTrails(store: EndpointStore, trajectoryIds: string[]): Promise<CallTrail[]> {
  const trails: CallTrail[] = [];
  for (const id of trajectoryIds) {
    for (const record of await store.list({ trajectoryId: id, limit: 10_000 })) {
      trails.push({ key: record.key, tool: record.tool, state: record.state, events: await store.events(record.key) });
    }
  }
  return trails;
}

/**
 * What the trajectories' histories show: workflow task failures by message — a worker paused in
 * the middle of a workflow activation fails it on resume ("Potential deadlock detected"), and the
 * task is retried; a nondeterminism error would be a defect — and where the settled calls'
 * attempts ran (local-activity markers, activity tasks).
 */
export async function historyFigures(
  settle: SettleClient,
  ids: string[],
  historiesDir?: string,
): Promise<{ taskFailures: Record<string, number>; laneAttempts: LaneAttempts }> {
  const failures: Record<string, number> = {};
  const laneAttempts: LaneAttempts = { local: 0, activity: 0 };
  const add = (message: string) => (failures[message] = (failures[message] ?? 0) + 1);
  for (const id of ids) {
    try {
      const history = await settle.handle(id).fetchHistory();
      if (historiesDir) {
        fs.mkdirSync(historiesDir, { recursive: true });
        fs.writeFileSync(path.join(historiesDir, `${id}.json`), JSON.stringify(history, null, 1));
      }
      for (const e of history.events ?? []) {
        const message = e.workflowTaskFailedEventAttributes?.failure?.message;
        if (message) add(message.slice(0, 80));
      }
      countLaneAttempts(history.events ?? [], laneAttempts);
    } catch {
      add('(history unavailable)');
    }
  }
  return { taskFailures: failures, laneAttempts };
}

/**
 * How many times the lease renewal statement ran since the cluster started: exact, from
 * pg_stat_statements (loaded by chaos/infra/postgres-server.ts). The statement is recognised by
 * the text settle prepares (activities/store/statements.ts renewStatement) up to its first literal,
 * which pg_stat_statements normalises. Null when the extension is missing or nothing matched.
 */
export async function renewalStatements(db: ReturnType<typeof openDatabase>): Promise<number | null> {
  const text = renewStatement(db).sql;
  const prefix = text.slice(0, text.indexOf("'"));
  try {
    const { rows } = await sql<{ calls: string | null; n: string }>`
      select sum(calls)::text as calls, count(*)::text as n from pg_stat_statements
      where query like ${prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%'}`.execute(db);
    return rows[0] && Number(rows[0].n) > 0 ? Number(rows[0].calls) : null;
  } catch {
    return null;
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
): ScenarioResult {
  const problems: string[] = [];
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
  const leftInDoubt = trails.filter((t) => t.state === 'IN_DOUBT').length;
  const recovered = recoveries(faults, trails);
  const operator: Record<string, number> = {};
  for (const a of sre.actions.filter((x) => x.path !== 'none')) operator[a.tool] = (operator[a.tool] ?? 0) + 1;
  const faultCounts: Record<string, number> = {};
  for (const f of faults) {
    const name = f.failpoint ? `${f.kind}@${f.failpoint}` : f.aimedAt ? `${f.kind}@in-flight-call` : f.kind;
    faultCounts[name] = (faultCounts[name] ?? 0) + 1;
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
    leftInDoubt,
    operator,
    faults: faultCounts,
    failedTrajectories: reports.filter((r) => r.outcome === 'failed').length,
    failedTurns: reports.reduce((n, r) => n + r.failedTurns, 0),
    unfinished: reports.filter((r) => r.outcome === 'unfinished').length,
    recovery: recoveryFigures(recovered),
    ...renewalFigures(rate),
    ...(renewalsNote ? { renewalsNote } : {}),
    workflowTaskFailures: taskFailures,
    durationS: Math.round((Date.now() - started) / 1000),
    problems,
  };
}

/**
 * A call settle settled by itself after a fault — its executor, or a probe from the facts (a file
 * edit's file hash, a shell command's run markers) — rather than an operator.
 */
export function probeable(r: Recovery): boolean {
  return r.by !== 'operator';
}

/** A scenario's recovery figures: settled by settle itself, all, unsettled, and the five slowest. */
export function recoveryFigures(recovered: Recovery[] & { unsettled: number }): ScenarioResult['recovery'] {
  return {
    probeable: stats(recovered.filter(probeable)),
    all: stats(recovered),
    unsettled: recovered.unsettled,
    slowest: [...recovered].sort((a, b) => b.ms - a.ms).slice(0, 5),
  };
}

/** Lease renewals per running call-second, and what they were computed from (null: not measured). */
export function renewalFigures(rate: ReturnType<typeof renewalRate> | null) {
  return {
    renewalsPerRunningCallSecond: rate?.perSecond ?? null,
    renewals: rate ? { statements: rate.renewals, runningCallSeconds: Math.round(rate.runningSeconds * 10) / 10 } : null,
  };
}

/** A small seeded PRNG: a scenario's fault schedule and workload are the same for the same seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
