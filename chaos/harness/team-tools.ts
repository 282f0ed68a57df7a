/**
 * The team-tools workload: examples/team-tools run as its team runs it — its own worker process
 * (SettlePlugin with its two tools) and its own `billingWorkflow` (create_invoice over HTTP, then
 * append_ledger_line on disk) — under the scenario's faults. Effects are counted where they land,
 * never from settle's records: invoices in the billing service's effect log (one customer per
 * workflow), lines in each workflow's ledger file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { openDatabase } from '../../activities/store/database';
import { EndpointStore } from '../../activities/store/endpoint-store';
import { SettleClient } from '../../client/index';
import { errorMessage } from '../../core/errors';
import { startIdempotentServer, type Effect } from '../../test/support/idempotent-http-server';
import type { BillingResult, billingWorkflow } from '../../examples/team-tools/src/workflows';
import { LOCAL_LANE_TASK_TIMEOUT_MS } from '../../core/tools/lanes';
import { Cluster, sleep, type Fault } from './cluster';
import { laneEnv, laneFields, runName } from './lanes';
import { recoveries, recoveryFigures, renewalFigures, renewalRate, type CallTrail } from './metrics';
import { callTrails, historyFigures, renewalStatements } from './collect';
import { mulberry32 } from './random';
import type { Scenario, ScenarioEnvironment, ScenarioResult } from './scenario-types';

/** The example worker's line once it polls (examples/team-tools/src/worker.ts). */
const READY = /billing worker: polling .*queue=/;
const COMPLETED = new Set(['executed', 'replayed', 'settled_by_probe', 'settled_by_operator']);

interface BillingPlan {
  id: string;
  customer: string;
  amountCents: number;
  ledger: string;
}

interface BillingReport {
  plan: BillingPlan;
  outcome: 'completed' | 'failed' | 'unfinished';
  result: BillingResult | null;
  error: string | null;
}

export async function runTeamToolsScenario(scenario: Scenario, env: ScenarioEnvironment): Promise<ScenarioResult> {
  if (!env.team) throw new Error(`${scenario.name}: the team-tools worker entry and workflow bundle were not built`);
  const random = mulberry32(env.seed);
  const name = runName(scenario);
  const dir = path.join(env.dir, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'ledgers'), { recursive: true });
  const started = Date.now();
  const billing = await startIdempotentServer();
  const taskQueue = `chaos-${name}-${env.seed}`;
  const cluster = await Cluster.start({
    dir,
    workers: scenario.workers,
    taskQueue,
    workflowBundlePath: env.team.workflowBundlePath,
    workerEntry: env.team.workerEntry,
    env: { BILLING_API_URL: billing.url, WORKFLOW_BUNDLE: env.team.workflowBundlePath, ...laneEnv(scenario) },
    ready: READY,
    ...(scenario.failpoints ? { failpoints: scenario.failpoints } : {}),
    ...(env.temporalAddress ? { temporalAddress: env.temporalAddress } : {}),
    pauseMs: () => scenario.pauseMs?.(random) ?? 6_000,
    log: env.log,
  });
  const connection = await Connection.connect({ address: cluster.temporalAddress });
  const client = new Client({ connection });
  const db = openDatabase(cluster.databaseUrl, { max: 4 });
  const store = new EndpointStore(db);
  try {
    const n = scenario.orchestrated + scenario.scripted;
    const plans: BillingPlan[] = Array.from({ length: n }, (_, i) => ({
      id: `${name}-${env.seed}-${i}`,
      customer: `cus_${env.seed}_${i}`,
      amountCents: 100 + i,
      ledger: path.join(dir, 'ledgers', `${i}.txt`),
    }));
    const deadline = Date.now() + scenario.timeoutMs;
    let running = true;
    const spread = scenario.spreadMs ?? 0;
    const workload = Promise.all(
      plans.map(async (plan, i) => {
        await sleep(n > 1 ? (spread * i) / (n - 1) : 0);
        return runBilling(client, taskQueue, plan, deadline);
      }),
    ).finally(() => (running = false));
    const faultsUntil = Date.now() + (scenario.faultsForMs ?? Infinity);
    const faulting = (scenario.faults?.(cluster, random, () => running && Date.now() < faultsUntil) ?? Promise.resolve()).catch(
      (err: unknown) => env.log(`${name}: fault injection stopped: ${String(err)}`),
    );
    const reports = await workload;
    await faulting;
    cluster.resumeAll();

    const ids = plans.map((p) => p.id);
    const trails = await callTrails(store, ids);
    const histories = await historyFigures(new SettleClient(client, taskQueue), ids, env.historiesDir);
    const renewals = await renewalStatements(db);
    return summarize(scenario, reports, billing.effects(), trails, cluster.faults, renewals, started, histories);
  } finally {
    await connection.close().catch(() => {});
    await db.destroy().catch(() => {});
    await cluster.stop();
    await billing.close();
  }
}

async function runBilling(client: Client, taskQueue: string, plan: BillingPlan, deadline: number): Promise<BillingReport> {
  try {
    const result = await client.connection.withDeadline(deadline, async () => {
      const handle = await client.workflow.start<typeof billingWorkflow>('billingWorkflow', {
        workflowId: plan.id,
        taskQueue,
        args: [{ customer: plan.customer, amountCents: plan.amountCents, ledger: plan.ledger }],
        // As settle's client starts trajectories: what notices a worker that died in a local-lane call.
        workflowTaskTimeout: LOCAL_LANE_TASK_TIMEOUT_MS,
      });
      return handle.result();
    });
    return { plan, outcome: 'completed', result, error: null };
  } catch (err) {
    const failed = err instanceof WorkflowFailedError;
    return { plan, outcome: failed ? 'failed' : 'unfinished', result: null, error: errorMessage(failed ? (err.cause ?? err) : err) };
  }
}

function ledgerLines(file: string): number {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
}

function summarize(
  scenario: Scenario,
  reports: BillingReport[],
  effects: readonly Effect[],
  trails: CallTrail[],
  faults: Fault[],
  renewalCount: number | null,
  started: number,
  { taskFailures, laneAttempts }: Awaited<ReturnType<typeof historyFigures>>,
): ScenarioResult {
  const problems: string[] = [];
  let duplicates = 0;
  let lost = 0;
  let misreported = 0;
  let calls = 0;
  const invoices = new Map<string, number>();
  for (const e of effects) {
    const customer = (e.body as { customer?: string }).customer ?? '(none)';
    invoices.set(customer, (invoices.get(customer) ?? 0) + 1);
    if (e.key === null) problems.push(`invoice ${e.id} for ${customer} arrived without an Idempotency-Key`);
  }
  const known = new Set(reports.map((r) => r.plan.customer));
  for (const customer of invoices.keys()) if (!known.has(customer)) problems.push(`an invoice nobody asked for: ${customer}`);

  /** One call's effect, counted where it landed, against how settle said the call ended (null: never proposed). */
  const check = (what: string, count: number, resolution: string | null) => {
    if (count > 1) {
      duplicates += count - 1;
      problems.push(`${what} happened ${count} times (${resolution ?? 'never proposed'})`);
    }
    if (resolution !== null && COMPLETED.has(resolution) && count === 0) {
      lost++;
      problems.push(`${what} reported ${resolution} but did not happen`);
    }
    if ((resolution === null || resolution === 'gave_up') && count > 0) {
      misreported++;
      problems.push(`${what} reported ${resolution ?? 'never proposed'} but happened`);
    }
  };
  for (const report of reports) {
    const { plan, result } = report;
    if (report.outcome !== 'completed') problems.push(`${plan.id}: ${report.outcome}${report.error ? ` — ${report.error}` : ''}`);
    if (!result) continue;
    calls += result.ledger ? 2 : 1;
    check(`${plan.id} create_invoice`, invoices.get(plan.customer) ?? 0, result.invoice.resolution);
    check(`${plan.id} append_ledger_line`, ledgerLines(plan.ledger), result.ledger?.resolution ?? null);
  }
  for (const [message, n] of Object.entries(taskFailures)) {
    if (/nondetermin/i.test(message)) problems.push(`${n} workflow task(s) failed: ${message}`);
  }
  const recovered = recoveries(faults, trails);
  const faultCounts: Record<string, number> = {};
  for (const f of faults) {
    const name = f.failpoint ? `${f.kind}@${f.failpoint}` : f.aimedAt ? `${f.kind}@in-flight-call` : f.kind;
    faultCounts[name] = (faultCounts[name] ?? 0) + 1;
  }
  const rate = renewalCount === null ? null : renewalRate(renewalCount, trails, faults);
  return {
    scenario: scenario.name,
    description: scenario.description,
    ...laneFields(scenario, recovered, laneAttempts),
    trajectories: reports.length,
    calls,
    effects: [...invoices.values()].reduce((a, b) => a + b, 0) + reports.reduce((n, r) => n + ledgerLines(r.plan.ledger), 0),
    duplicates,
    lost,
    misreported,
    leftInDoubt: trails.filter((t) => t.state === 'IN_DOUBT').length,
    operator: {},
    faults: faultCounts,
    failedTrajectories: reports.filter((r) => r.outcome === 'failed').length,
    failedTurns: 0,
    unfinished: reports.filter((r) => r.outcome === 'unfinished').length,
    recovery: recoveryFigures(recovered),
    ...renewalFigures(rate),
    ...(rate ? {} : { renewalsNote: 'not measured: no renewal statement in pg_stat_statements' }),
    workflowTaskFailures: taskFailures,
    durationS: Math.round((Date.now() - started) / 1000),
    problems,
  };
}
