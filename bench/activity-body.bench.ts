/**
 * `npm run bench:activity` — the settled activity's own cost, without Temporal: settle's
 * `executeToolCall` (argument check, key, workspace check, plan, claim with intent overlapped by
 * the prepared edit, rename, completion, two call-event log lines) against the baselines' activities
 * (bench/plain: the same edit bare, and bracketed by a hand-rolled record), each run in
 * @temporalio/testing's MockActivityEnvironment on this process, one call at a time, the order
 * cycling. Per call: wall time (median) and CPU — the main thread's (from /proc/self/schedstat,
 * ns) and the whole process's (process.cpuUsage).
 *
 * What it separates: in the end-to-end comparison settle's worker spends more CPU per call than
 * the baseline's; this says how much of that is the activity body itself, and the rest is the
 * SDK's handling of workflow and activity tasks. Postgres: the URL given (`npm run bench` passes
 * its embedded server), else a throw-away embedded one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MockActivityEnvironment } from '@temporalio/testing';
import SonicBoom from 'sonic-boom';
import { createActivities, type LabelledOutcome, type ToolCallInput } from '../activities/index';
import { migrateToLatest, openDatabase } from '../activities/store/database';
import { EndpointStore } from '../activities/store/endpoint-store';
import { logCallEvents } from '../activities/observability/log';
import { deriveKey } from '../core/key';
import { startPostgres } from '../stack/postgres';
import { closeRecordPool, plainActivities } from './plain/activities';
import type { Figure } from './support/figures';
import { median, orders, quantile, round2 } from './support/stats';

type PlainInput = Parameters<typeof plainActivities.plainFileEdit>[0];

const SIDES = ['settle', 'recorded', 'plain'] as const;
type Side = (typeof SIDES)[number];
const LINES = 40;

interface Sample {
  wallMs: number;
  mainCpuMs: number;
  processCpuMs: number;
}

export async function benchActivityBody(
  databaseUrl: string,
  options: { calls?: number; log?: (l: string) => void } = {},
): Promise<Figure[]> {
  const calls = options.calls ?? Number(process.env.BENCH_ACTIVITY_CALLS ?? 400);
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-activity-bench-')));
  fs.chmodSync(root, 0o755);
  // The hand-rolled record's pool reads DATABASE_URL at its first call (bench/plain/activities.ts).
  process.env.DATABASE_URL ??= databaseUrl;
  if (process.env.DATABASE_URL !== databaseUrl) throw new Error('benchActivityBody: DATABASE_URL names another database');
  await migrateToLatest(databaseUrl);
  const db = openDatabase(databaseUrl);
  // As on the worker: every call event becomes a JSON line, here written to /dev/null.
  const devNull = new SonicBoom({ dest: '/dev/null', sync: false });
  const stopLogs = logCallEvents((line) => devNull.write(line + '\n'));
  try {
    const activities = createActivities({
      store: new EndpointStore(db),
      identity: `activity-bench@${os.hostname()}:${process.pid}`,
      policy: { workspaceRoot: root, modelEndpoints: [], modelKeyEnvs: [], allowNoCapability: false },
      runsTrajectories: true,
    });
    const sides = Object.fromEntries(SIDES.map((side) => [side, new EditStream(root, side)])) as Record<Side, EditStream>;
    const run: Record<Side, (i: number) => Promise<void>> = {
      settle: async (i) => {
        const edit = sides.settle.next();
        const trajectoryId = sides.settle.id;
        const call = { turn: i, callId: `c${i}`, tool: 'file_edit', args: { ...edit, allow_multiple: false } };
        const key = deriveKey({ trajectoryId, ...call });
        const env = new MockActivityEnvironment({ workflowExecution: { workflowId: trajectoryId, runId: 'run' }, activityId: String(i) });
        const outcome: LabelledOutcome = await env.run((input: ToolCallInput) => activities.executeToolCall(input), {
          key,
          ...call,
          workspace: sides.settle.workspace,
          leaseMs: 3_000,
          countProposal: true,
        });
        if (outcome.kind !== 'completed' || outcome.result.error !== null) throw new Error(`settle call ${i}: ${JSON.stringify(outcome)}`);
      },
      recorded: async (i) => {
        const env = new MockActivityEnvironment({
          workflowExecution: { workflowId: sides.recorded.id, runId: 'run' },
          activityId: String(i),
        });
        await env.run((input: PlainInput) => plainActivities.recordedFileEdit(input), {
          workspace: sides.recorded.workspace,
          edit: sides.recorded.next(),
        });
      },
      plain: async (i) => {
        const env = new MockActivityEnvironment({ workflowExecution: { workflowId: sides.plain.id, runId: 'run' }, activityId: String(i) });
        await env.run((input: PlainInput) => plainActivities.plainFileEdit(input), {
          workspace: sides.plain.workspace,
          edit: sides.plain.next(),
        });
      },
    };
    const samples: Record<Side, Sample[]> = { settle: [], recorded: [], plain: [] };
    const warmup = 30;
    for (let i = 0; i < warmup + calls; i++) {
      // The order cycles through all six, so no side always follows the same one.
      for (const side of ORDERS[i % ORDERS.length]!) {
        const cpu0 = process.cpuUsage();
        const main0 = mainThreadNs();
        const t0 = performance.now();
        await run[side](i);
        const wallMs = performance.now() - t0;
        const mainCpuMs = (mainThreadNs() - main0) / 1e6;
        const cpu = process.cpuUsage(cpu0);
        if (i >= warmup) samples[side].push({ wallMs, mainCpuMs, processCpuMs: (cpu.user + cpu.system) / 1000 });
      }
    }
    const per = (side: Side) => ({
      wallMs: round3(median(samples[side].map((s) => s.wallMs))),
      wallP90Ms: round3(
        quantile(
          samples[side].map((s) => s.wallMs),
          0.9,
        ),
      ),
      mainThreadCpuMs: round3(mean(samples[side].map((s) => s.mainCpuMs))),
      processCpuMs: round3(mean(samples[side].map((s) => s.processCpuMs))),
    });
    const figures = { settle: per('settle'), recorded: per('recorded'), plain: per('plain') };
    options.log?.(
      `  activity body, ${calls} calls per side: wall ${figures.settle.wallMs} / ${figures.recorded.wallMs} / ${figures.plain.wallMs} ms, ` +
        `main-thread CPU ${figures.settle.mainThreadCpuMs} / ${figures.recorded.mainThreadCpuMs} / ${figures.plain.mainThreadCpuMs} ms (settle / recorded / plain)`,
    );
    const against = 'the hand-rolled record activity (bench/plain recordedFileEdit), same process, calls interleaved';
    const detail = { callsPerSide: calls, perCall: figures };
    return [
      {
        group: 'activity',
        figure: 'activity body wall time, settle/recorded (median per call, no Temporal)',
        value: round2(figures.settle.wallMs / figures.recorded.wallMs),
        unit: '×',
        against,
        detail,
      },
      {
        group: 'activity',
        figure: 'activity body main-thread CPU per call, settle − recorded',
        value: round3(figures.settle.mainThreadCpuMs - figures.recorded.mainThreadCpuMs),
        unit: 'ms',
        against,
      },
      {
        group: 'activity',
        figure: 'activity body process CPU per call, settle − recorded',
        value: round3(figures.settle.processCpuMs - figures.recorded.processCpuMs),
        unit: 'ms',
        against,
      },
    ];
  } finally {
    stopLogs();
    devNull.end();
    await closeRecordPool();
    await db.destroy();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** Every order of the three sides, cycled. */
const ORDERS = orders<Side>(SIDES);

/**
 * One side's file and its edits: each replaces one line, and after LINES edits the file is written
 * afresh (outside the measurement) with a new workspace, so every edit finds exactly one match.
 */
class EditStream {
  private n = 0;
  private generation = 0;
  id = '';
  workspace = '';
  private file = '';

  constructor(
    private readonly root: string,
    private readonly side: Side,
  ) {
    this.fresh();
  }

  next(): { path: string; old_str: string; new_str: string } {
    if (this.n === LINES) this.fresh();
    const i = this.n++;
    return { path: this.file, old_str: `line ${i}: todo`, new_str: `line ${i}: done` };
  }

  private fresh(): void {
    this.id = `activity-bench-${this.side}-${process.pid}-${this.generation++}`;
    this.workspace = path.join(this.root, this.id);
    fs.mkdirSync(this.workspace);
    this.file = path.join(this.workspace, 'notes.txt');
    fs.writeFileSync(this.file, Array.from({ length: LINES }, (_, i) => `line ${i}: todo`).join('\n') + '\n');
    this.n = 0;
  }
}

/** CPU time of this process's main thread so far, in ns (the scheduler's own account). */
function mainThreadNs(): number {
  return Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-'));
  fs.chmodSync(dataDir, 0o755);
  const postgres = await startPostgres({ dataDir: path.join(dataDir, 'data'), ephemeral: true });
  try {
    const log = (l: string) => console.error(l);
    for (const f of await benchActivityBody(postgres.url, { log })) console.log(`${f.figure}: ${f.value} ${f.unit}`);
  } finally {
    await postgres.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(0);
}
