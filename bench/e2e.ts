/**
 * End-to-end and scale benchmarks: trajectories of 10 small file edits through settle
 * (trajectoryWorkflow, one settled `file_edit` per call) against the plain baseline
 * (bench/plain: one proxied activity doing the same atomic edit, no endpoint record), on the same
 * Temporal server and Postgres, each side on its own worker process and task queue. End to end
 * also runs a third side, `recorded`: the plain workflow whose activity brackets the edit with a
 * hand-rolled durable record (two commits, nothing else), which splits settle's overhead into what
 * any durable record costs on this disk and what settle adds on top.
 */
import fs from 'node:fs';
import path from 'node:path';
import proto from '@temporalio/proto';

const { temporal } = proto;
import { trajectoryStartOptions } from '../client/index';
import type { BenchStack } from './support/bench-stack';
import type { Figure } from './support/figures';
import { rssBytes, treeCpuMs } from './support/proc';
import { median, orders, quantile, round2, spread } from './support/stats';

export const CALLS_PER_TRAJECTORY = 10;
type Side = 'settle' | 'plain' | 'recorded';
let seq = 0;

/** A fresh workspace with one file and the 10 edits that each replace one of its lines. */
function prepare(
  b: BenchStack,
  side: Side,
): { id: string; workspace: string; edits: { path: string; old_str: string; new_str: string }[] } {
  const id = `bench-${side}-${process.pid}-${seq++}`;
  const workspace = path.join(b.workDir, 'ws', id);
  fs.mkdirSync(workspace, { recursive: true });
  const file = path.join(workspace, 'notes.txt');
  fs.writeFileSync(file, Array.from({ length: CALLS_PER_TRAJECTORY }, (_, i) => `line ${i}: todo`).join('\n') + '\n');
  const edits = Array.from({ length: CALLS_PER_TRAJECTORY }, (_, i) => ({
    path: file,
    old_str: `line ${i}: todo`,
    new_str: `line ${i}: done`,
  }));
  return { id, workspace, edits };
}

async function startTrajectory(b: BenchStack, side: Side) {
  const { id, workspace, edits } = prepare(b, side);
  if (side === 'settle') {
    // Started as settle's client starts one (client/index.ts): what orchestrators get.
    const turns = edits.map((args, i) => ({ turn: i, calls: [{ call_id: `c${i}`, tool: 'file_edit', args }] }));
    return b.client.workflow.start('trajectoryWorkflow', trajectoryStartOptions(b.settleQueue, id, { workspace, turns }));
  }
  const workflow = side === 'plain' ? 'plainTrajectory' : 'recordedTrajectory';
  return b.client.workflow.start(workflow, { taskQueue: b.plainQueue, workflowId: id, args: [{ workspace, edits }] });
}

type Handle = Awaited<ReturnType<typeof startTrajectory>>;

/** Checks the trajectory did its 10 edits (a benchmark of failing calls would measure nothing). */
function checkResult(side: Side, result: unknown): void {
  if (side === 'settle') {
    const r = result as { calls: { resolution: string; observation: { exit_status: number } | null }[] };
    const ok = r.calls.filter((c) => c.resolution === 'executed' && c.observation?.exit_status === 0).length;
    if (ok !== CALLS_PER_TRAJECTORY)
      throw new Error(`settle trajectory executed ${ok} of ${CALLS_PER_TRAJECTORY} edits: ${JSON.stringify(r.calls[0])}`);
  } else {
    const r = result as string[];
    if (r.length !== CALLS_PER_TRAJECTORY || !r.every((o) => o.startsWith('replaced 1 block'))) {
      throw new Error(`${side} trajectory: ${JSON.stringify(r)}`);
    }
  }
}

interface HistoryFacts {
  events: number;
  /** The history's size as the server stores and ships it: every event protobuf-encoded, bytes. */
  bytes: number;
  byType: Record<string, number>;
  /** Per call: from the previous call's completion (or the start) to this call's completion, ms. */
  callLatencies: number[];
  /** Workflow tasks: started → completed, ms (first one includes the sandbox start-up). */
  firstWorkflowTaskMs: number;
  workflowTaskMs: number;
  activityMs: number;
}

async function historyFacts(handle: Handle): Promise<HistoryFacts> {
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const t = (e: proto.temporal.api.history.v1.IHistoryEvent) => {
    const s = e.eventTime!;
    return Number(s.seconds) * 1000 + (s.nanos ?? 0) / 1e6;
  };
  const byType: Record<string, number> = {};
  const latencies: number[] = [];
  let last = t(events[0]!);
  const started = new Map<string, number>();
  let wftTotal = 0;
  let wftFirst = -1;
  let activityTotal = 0;
  for (const e of events) {
    const type = (temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
    byType[type] = (byType[type] ?? 0) + 1;
    if (e.workflowTaskStartedEventAttributes) started.set('wft', t(e));
    if (e.workflowTaskCompletedEventAttributes) {
      const d = t(e) - started.get('wft')!;
      wftTotal += d;
      if (wftFirst < 0) wftFirst = d;
    }
    if (e.activityTaskStartedEventAttributes) started.set(`a${String(e.activityTaskStartedEventAttributes.scheduledEventId)}`, t(e));
    if (e.activityTaskCompletedEventAttributes) {
      const a = e.activityTaskCompletedEventAttributes;
      activityTotal += t(e) - started.get(`a${String(a.scheduledEventId)}`)!;
      latencies.push(t(e) - last);
      last = t(e);
    }
  }
  return {
    events: events.length,
    bytes: events.reduce((n, e) => n + temporal.api.history.v1.HistoryEvent.encode(e).finish().length, 0),
    byType,
    callLatencies: latencies,
    firstWorkflowTaskMs: wftFirst,
    workflowTaskMs: wftTotal,
    activityMs: activityTotal,
  };
}

interface Counters {
  cpu: { server: number; postgres: number; settleWorker: number; plainWorker: number };
  statements: Record<string, number>;
  commits: number;
}

const MONITOR_FILTER = `query not ilike '%pg_stat%' and query not ilike '%pg_sleep%'`;

async function counters(b: BenchStack): Promise<Counters> {
  // Backends flush their commit counters to the cumulative statistics at most once a second.
  await new Promise((r) => setTimeout(r, 1100));
  const { rows: statementRows } = await b.monitor.query<{ query: string; calls: string }>(
    `select query, calls::text from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database()) and ${MONITOR_FILTER}`,
  );
  const { rows } = await b.monitor.query<{ c: string }>(
    `select xact_commit::text as c from pg_stat_database where datname = current_database()`,
  );
  return {
    cpu: {
      server: treeCpuMs(b.pids.server),
      postgres: treeCpuMs(b.pids.postgres),
      settleWorker: treeCpuMs(b.pids.settleWorker),
      plainWorker: treeCpuMs(b.pids.plainWorker),
    },
    statements: Object.fromEntries(statementRows.map((r) => [r.query, Number(r.calls)])),
    commits: Number(rows[0]!.c),
  };
}

/** Statement counts between two snapshots, by a short label of the SQL. */
function statementDelta(before: Counters, after: Counters): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [q, n] of Object.entries(after.statements)) {
    const d = n - (before.statements[q] ?? 0);
    if (d > 0) out[label(q)] = (out[label(q)] ?? 0) + d;
  }
  return out;
}

function label(sql: string): string {
  const s = sql.replace(/\s+/g, ' ');
  if (/insert into "settle_endpoint_records"/i.test(s)) return s.includes('settle_tool_calls') ? 'claim (+ proposed call)' : 'claim';
  if (/"complete"|'COMPLETED'/.test(s) && /update "settle_endpoint_records"/i.test(s))
    return s.includes('result') ? 'transition → COMPLETED' : 'transition';
  if (/insert into "settle_tool_calls"/i.test(s)) return 'proposed call';
  if (/insert into plain_bench_records/i.test(s)) return 'hand-rolled insert';
  if (/update plain_bench_records/i.test(s)) return 'hand-rolled update';
  if (/update "settle_endpoint_records"/i.test(s)) return 'transition';
  if (/^select/i.test(s)) return 'select';
  return s.slice(0, 60);
}

interface PhaseResult {
  side: Side;
  trajectories: number;
  wallMs: number;
  perTrajectoryMs: number[];
  history: HistoryFacts[];
  cpuMs: { server: number; postgres: number; worker: number };
  statements: Record<string, number>;
  commits: number;
  maxRss: number;
  maxConnections: number;
}

/** The recorded side runs on the plain worker (its own workflow and activity, same process). */
const workerOf = (side: Side) => (side === 'settle' ? 'settleWorker' : 'plainWorker');

/** Runs `n` trajectories of one side, `concurrency` at a time, and accounts what they cost. */
async function phase(b: BenchStack, side: Side, n: number, concurrency: number): Promise<PhaseResult> {
  const before = await counters(b);
  const workerPid = b.pids[workerOf(side)];
  let maxRss = rssBytes(workerPid);
  let maxConnections = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      maxRss = Math.max(maxRss, rssBytes(workerPid));
      const { rows } = await b.monitor.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and datname = current_database()`,
      );
      maxConnections = Math.max(maxConnections, rows[0]!.n - 1); // not the monitor itself
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const handles: Handle[] = [];
  const perTrajectoryMs: number[] = [];
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const t0 = performance.now();
        const handle = await startTrajectory(b, side);
        handles.push(handle);
        checkResult(side, await handle.result());
        perTrajectoryMs.push(performance.now() - t0);
      }
    }),
  );
  const wallMs = performance.now() - start;
  sampling = false;
  await sampler;
  const after = await counters(b);
  const history: HistoryFacts[] = [];
  for (let i = 0; i < handles.length; i += 50) history.push(...(await Promise.all(handles.slice(i, i + 50).map(historyFacts))));
  const workerKey = workerOf(side);
  return {
    side,
    trajectories: n,
    wallMs,
    perTrajectoryMs,
    history,
    cpuMs: {
      server: after.cpu.server - before.cpu.server,
      postgres: after.cpu.postgres - before.cpu.postgres,
      worker: after.cpu[workerKey] - before.cpu[workerKey],
    },
    statements: statementDelta(before, after),
    // Less the two counter reads of the monitor connection.
    commits: after.commits - before.commits - 2,
    maxRss,
    maxConnections,
  };
}

function perCall(p: PhaseResult) {
  const calls = p.trajectories * CALLS_PER_TRAJECTORY;
  const sum = (f: (h: HistoryFacts) => number) => p.history.reduce((s, h) => s + f(h), 0);
  const eventTypes: Record<string, number> = {};
  for (const h of p.history) for (const [k, v] of Object.entries(h.byType)) eventTypes[k] = (eventTypes[k] ?? 0) + v;
  return {
    historyEvents: sum((h) => h.events) / calls,
    historyBytes: sum((h) => h.bytes) / calls,
    historyEventsPerTrajectory: Object.fromEntries(Object.entries(eventTypes).map(([k, v]) => [k, v / p.trajectories])),
    sqlStatements: Object.values(p.statements).reduce((a, b) => a + b, 0) / calls,
    statementsByKind: Object.fromEntries(Object.entries(p.statements).map(([k, v]) => [k, v / calls])),
    commits: Math.max(0, p.commits) / calls,
    workerCpuMs: p.cpuMs.worker / calls,
    serverCpuMs: p.cpuMs.server / calls,
    postgresCpuMs: p.cpuMs.postgres / calls,
    workflowTaskMs: sum((h) => h.workflowTaskMs) / calls,
    firstWorkflowTaskMs: median(p.history.map((h) => h.firstWorkflowTaskMs)),
    activityMs: sum((h) => h.activityMs) / calls,
  };
}

const roundObj = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round2(v)]));

const SIDES = ['settle', 'plain', 'recorded'] as const satisfies readonly Side[];
/** Every order of the three sides, cycled. */
const ORDERS = orders<Side>(SIDES);

interface Paired {
  ms: Record<Side, number[]>;
  /** Per set, side a's wall time over side b's. */
  ratio(a: Side, b: Side): number[];
}

/**
 * `sets` times one trajectory per side back to back, cycling through the orders. On a shared host
 * whose speed drifts within seconds (here: 2× between hours, ±20 % between rounds), the sides of a
 * set run on the same host; rounds of several trajectories per side do not.
 */
async function paired(b: BenchStack, sets: number): Promise<Paired> {
  const ms: Record<Side, number[]> = { settle: [], plain: [], recorded: [] };
  for (let i = 0; i < sets; i++) {
    for (const side of ORDERS[i % ORDERS.length]!) {
      const t0 = performance.now();
      const handle = await startTrajectory(b, side);
      checkResult(side, await handle.result());
      ms[side].push(performance.now() - t0);
    }
  }
  return { ms, ratio: (x, y) => ms[x].map((v, i) => v / ms[y][i]!) };
}

/**
 * Side by side, interleaved, twice: `pairs` sets of one trajectory per side (each ratio: the median
 * of the sets' ratios), then `rounds` rounds of `perRound` trajectories one at a time on each side
 * (cycling which side goes first), which account what each side costs per call (CPU by process,
 * statements, commits and history need a side to themselves) and give a second ratio, of the
 * rounds' median trajectory wall times.
 */
export async function endToEnd(
  b: BenchStack,
  opts: { rounds: number; perRound: number; pairs: number; log: (l: string) => void },
): Promise<Figure[]> {
  for (const side of SIDES) await phase(b, side, 3, 1); // warm-up
  const sets = await paired(b, opts.pairs);
  const setRatio = (x: Side, y: Side) => spread(sets.ratio(x, y));
  const p = setRatio('settle', 'plain');
  const sr = setRatio('settle', 'recorded');
  const rp = setRatio('recorded', 'plain');
  opts.log(
    `  e2e ${opts.pairs} sets: settle ${median(sets.ms.settle).toFixed(0)} ms, plain ${median(sets.ms.plain).toFixed(0)} ms, recorded ${median(sets.ms.recorded).toFixed(0)} ms per trajectory; settle/plain ${p.median.toFixed(2)}, settle/recorded ${sr.median.toFixed(2)}, recorded/plain ${rp.median.toFixed(2)}`,
  );
  const rounds: Record<Side, PhaseResult>[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    const got: Partial<Record<Side, PhaseResult>> = {};
    for (const side of ORDERS[r % ORDERS.length]!) got[side] = await phase(b, side, opts.perRound, 1);
    rounds.push(got as Record<Side, PhaseResult>);
    opts.log(
      `  e2e round ${r + 1}: ${SIDES.map((side) => `${side} ${median(got[side]!.perTrajectoryMs).toFixed(0)} ms`).join(', ')} per trajectory`,
    );
  }
  const roundMs = (side: Side) => rounds.map((r) => median(r[side].perTrajectoryMs));
  const ratios = rounds.map((r) => median(r.settle.perTrajectoryMs) / median(r.plain.perTrajectoryMs));
  const merge = (side: Side): PhaseResult => {
    const ps = rounds.map((r) => r[side]);
    const statements: Record<string, number> = {};
    for (const p of ps) for (const [k, v] of Object.entries(p.statements)) statements[k] = (statements[k] ?? 0) + v;
    return {
      side,
      trajectories: ps.reduce((s, p) => s + p.trajectories, 0),
      wallMs: ps.reduce((s, p) => s + p.wallMs, 0),
      perTrajectoryMs: ps.flatMap((p) => p.perTrajectoryMs),
      history: ps.flatMap((p) => p.history),
      cpuMs: {
        server: ps.reduce((s, p) => s + p.cpuMs.server, 0),
        postgres: ps.reduce((s, p) => s + p.cpuMs.postgres, 0),
        worker: ps.reduce((s, p) => s + p.cpuMs.worker, 0),
      },
      statements,
      commits: ps.reduce((s, p) => s + p.commits, 0),
      maxRss: Math.max(...ps.map((p) => p.maxRss)),
      maxConnections: Math.max(...ps.map((p) => p.maxConnections)),
    };
  };
  const roundsRatio = (x: Side, y: Side) => median(roundMs(x)) / median(roundMs(y));
  const s = spread(ratios);
  const breakdown = (x: ReturnType<typeof perCall>) => ({
    historyEventsPerCall: round2(x.historyEvents),
    historyBytesPerCall: Math.round(x.historyBytes),
    sqlStatementsPerCall: round2(x.sqlStatements),
    statementsByKindPerCall: roundObj(x.statementsByKind),
    commitsPerCall: round2(x.commits),
    workerCpuMsPerCall: round2(x.workerCpuMs),
    serverCpuMsPerCall: round2(x.serverCpuMs),
    postgresCpuMsPerCall: round2(x.postgresCpuMs),
    workflowTaskMsPerCall: round2(x.workflowTaskMs),
    firstWorkflowTaskMs: round2(x.firstWorkflowTaskMs),
    activityMsPerCall: round2(x.activityMs),
    historyEventsPerTrajectory: roundObj(x.historyEventsPerTrajectory),
  });
  const method = 'median of sets (one trajectory per side, back to back, the order cycling)';
  const setDetail = (r: ReturnType<typeof spread>, x: Side, y: Side) => ({
    method,
    sets: opts.pairs,
    setRatio: { min: round2(r.min), median: round2(r.median), max: round2(r.max) },
    setMedianMs: { [x]: round2(median(sets.ms[x])), [y]: round2(median(sets.ms[y])) },
    roundsRatio: round2(roundsRatio(x, y)),
  });
  const wallTime = (side: Side, what: string): Figure => ({
    group: 'e2e',
    figure: `${what} trajectory wall time (10 calls)`,
    value: round2(median(roundMs(side))),
    unit: 'ms',
    detail: { ...roundObj(spread(roundMs(side))), ...breakdown(perCall(merge(side))) },
  });
  return [
    {
      group: 'e2e',
      figure: 'settled/plain wall-time ratio',
      value: round2(p.median),
      unit: '×',
      against: 'plain Temporal workflow, one proxied activity per edit, no endpoint record (bench/plain)',
      detail: {
        ...setDetail(p, 'settle', 'plain'),
        perRoundRatio: { min: round2(s.min), median: round2(s.median), max: round2(s.max) },
        rounds: opts.rounds,
        trajectoriesPerRoundPerSide: opts.perRound,
        callsPerTrajectory: CALLS_PER_TRAJECTORY,
        // As issue 16 was filed. It also prices the durable record itself (recorded/plain): the
        // target settle answers for is settled/recorded (README, "What the target means").
        targetAsFiled: '≤ 1.15',
      },
    },
    {
      group: 'e2e',
      figure: 'recorded/plain wall-time ratio (what a durable record alone costs)',
      value: round2(rp.median),
      unit: '×',
      against: 'plain (bench/plain), the same workflow and edit without the hand-rolled record',
      detail: setDetail(rp, 'recorded', 'plain'),
    },
    {
      group: 'e2e',
      figure: 'settled/recorded wall-time ratio (what settle adds over a durable record)',
      value: round2(sr.median),
      unit: '×',
      against:
        'plain workflow whose activity brackets the edit with a hand-rolled record: insert, edit, update, each its own commit (bench/plain)',
      detail: { ...setDetail(sr, 'settle', 'recorded'), target: '≤ 1.15' },
    },
    wallTime('settle', 'settle'),
    wallTime('plain', 'plain'),
    wallTime('recorded', 'recorded'),
  ];
}

export interface ScaleRow {
  side: Side;
  trajectories: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  cpuMsPerCall: { server: number; worker: number; postgres: number };
  workerRssMiB: number;
  postgresConnections: number;
}

/**
 * How long after a phase the server still fires its activities' timers: settle's heartbeat timeout
 * (DEFAULT_LEASE_MS, 3 s), plain's start-to-close (1 minute, bench/plain/workflows.ts), plus margin.
 */
export const DEFERRED_TIMERS_MS: Record<'settle' | 'plain', number> = { settle: 5_000, plain: 65_000 };

/** `levels` concurrent trajectories × 10 calls, each side in turn. */
export async function scale(
  b: BenchStack,
  opts: { levels: number[]; log: (l: string) => void },
): Promise<{ figures: Figure[]; rows: ScaleRow[] }> {
  const rows: ScaleRow[] = [];
  for (const level of opts.levels) {
    for (const side of ['settle', 'plain'] as const) {
      const p = await phase(b, side, level, level);
      // Each activity leaves one timer task on the server that fires after the activity ended (a
      // no-op then, ~0.5 ms of server CPU): settle's heartbeat timeout 3 s after its start, plain's
      // start-to-close 1 minute after. Settle's fire inside its own phase; plain's would fire inside
      // the next phase, settle's, and be billed to it. Wait them out between phases.
      opts.log(`  scale: waiting ${DEFERRED_TIMERS_MS[side] / 1000} s for ${side}'s activity timers to fire`);
      await new Promise((r) => setTimeout(r, DEFERRED_TIMERS_MS[side]));
      const calls = level * CALLS_PER_TRAJECTORY;
      const latencies = p.history.flatMap((h) => h.callLatencies);
      const row: ScaleRow = {
        side,
        trajectories: level,
        callsPerSecond: round2((calls * 1000) / p.wallMs),
        p50Ms: round2(quantile(latencies, 0.5)),
        p99Ms: round2(quantile(latencies, 0.99)),
        cpuMsPerCall: {
          server: round2(p.cpuMs.server / calls),
          worker: round2(p.cpuMs.worker / calls),
          postgres: round2(p.cpuMs.postgres / calls),
        },
        workerRssMiB: Math.round(p.maxRss / 2 ** 20),
        postgresConnections: p.maxConnections,
      };
      rows.push(row);
      opts.log(
        `  scale ${side} × ${level}: ${row.callsPerSecond} calls/s, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, CPU/call ${JSON.stringify(row.cpuMsPerCall)}, RSS ${row.workerRssMiB} MiB`,
      );
    }
  }
  const figures: Figure[] = rows.map((r) => ({
    group: 'scale',
    figure: `${r.side} × ${r.trajectories} trajectories: calls/s`,
    value: r.callsPerSecond,
    unit: 'calls/s',
    detail: { ...r },
  }));
  for (const level of opts.levels) {
    const s = rows.find((r) => r.side === 'settle' && r.trajectories === level)!;
    const p = rows.find((r) => r.side === 'plain' && r.trajectories === level)!;
    const cpu = (r: ScaleRow) => r.cpuMsPerCall.server + r.cpuMsPerCall.worker + r.cpuMsPerCall.postgres;
    figures.push({
      group: 'scale',
      figure: `settle/plain CPU per call × ${level}`,
      value: round2(cpu(s) / cpu(p)),
      unit: '×',
      against: 'plain: server + worker + Postgres CPU per call',
    });
  }
  return { figures, rows };
}
