/**
 * CLI start-up: wall time of `settle --help`, `settle key …`, `settle canonicalize` and, against a
 * running server, `settle status ID`, interleaved runs, min and median, beside a bare `node -e 0`.
 * Nothing is asserted.
 *
 * - checkout: `node bin/settle.js …`, as a user runs it from a checkout: the compiled copy in
 *   .settle/build/, checked against the sources first (bin/checkout-build.js).
 * - installed: the same compiled code started directly (`node .settle/build/cli/main.js`), as the
 *   packed package's bin starts dist/cli/main.js: no freshness check.
 * - sources through tsx: how every command started before (the "before").
 * - status: a completed trajectory on the bench stack's server. Its floor is its round trips: the
 *   same reads (client/status/grpc-reads.ts, a fresh channel) and report in this process (modules
 *   already loaded), timed and its gRPC calls counted, is reported beside it.
 *
 * Targets (the start-up issue): `--help` ≤ 400 ms and `key` ≤ 300 ms, and `status` bounded by
 * its round trips: what it takes beyond them no more than `--help`'s bound.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { trajectoryStartOptions } from '../client/index';
import { loadTemporalTarget } from '../client/connection';
import { GrpcTrajectoryReads } from '../client/status/grpc-reads';
import { trajectoryStatusReport, type TrajectoryReads } from '../client/status/report';
import { target } from './e2e';
import type { BenchStack } from './support/bench-stack';
import type { Figure } from './support/figures';
import { median } from './support/stats';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'settle.js');
const INSTALLED = path.join(ROOT, '.settle', 'build', 'cli', 'main.js');
const SOURCES = path.join(ROOT, 'cli', 'main.ts');

const KEY_ARGS = ['key', '--trajectory', 't-1', '--turn', '0', '--call-id', 'c1', '--tool', 'file_edit'];
const KEY_JSON = '{"path":"/ws/a.ts","old_str":"a","new_str":"b"}';

interface Command {
  name: string;
  args: string[];
  input?: string;
  env?: NodeJS.ProcessEnv;
}

/** Where `settle status` finds the server, and the trajectory it describes. */
export interface StatusTarget {
  address: string;
  namespace: string;
  taskQueue: string;
  trajectoryId: string;
}

/** A completed one-call trajectory on the bench stack's settle worker: what `settle status` describes. */
export async function statusTarget(b: BenchStack): Promise<StatusTarget> {
  const trajectoryId = `bench-cli-status-${process.pid}`;
  const workspace = path.join(b.workDir, 'ws', trajectoryId);
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(workspace, 'a.txt'), 'todo\n');
  const turns = [
    { turn: 0, calls: [{ call_id: 'c0', tool: 'file_view', args: { path: path.join(workspace, 'a.txt'), offset: 1, limit: 10 } }] },
  ];
  const handle = await b.client.workflow.start(
    'trajectoryWorkflow',
    trajectoryStartOptions(b.settleQueue, trajectoryId, { workspace, turns }),
  );
  await handle.result();
  return { address: b.stack.temporal.address, namespace: b.stack.temporal.namespace, taskQueue: b.settleQueue, trajectoryId };
}

function commands(status?: StatusTarget): Command[] {
  const list: Command[] = [
    { name: 'node -e 0', args: ['-e', '0'] },
    { name: 'settle --help (checkout)', args: [BIN, '--help'] },
    { name: 'settle key (checkout)', args: [BIN, ...KEY_ARGS, '--args', KEY_JSON] },
    { name: 'settle canonicalize (checkout)', args: [BIN, 'canonicalize'], input: '{"b":1,"a":[2,{"d":3,"c":4}]}' },
    { name: 'settle --help (installed)', args: [INSTALLED, '--help'] },
    { name: 'settle key (installed)', args: [INSTALLED, ...KEY_ARGS, '--args', KEY_JSON] },
    // The before: every command through tsx's loader.
    { name: 'settle --help (sources through tsx)', args: ['--import', 'tsx', SOURCES, '--help'] },
    { name: 'settle key (sources through tsx)', args: ['--import', 'tsx', SOURCES, ...KEY_ARGS, '--args', KEY_JSON] },
  ];
  if (status) {
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: status.address,
      TEMPORAL_NAMESPACE: status.namespace,
      TEMPORAL_TASK_QUEUE: status.taskQueue,
    };
    list.push({ name: 'settle status (checkout)', args: [BIN, 'status', status.trajectoryId], env });
  }
  return list;
}

function timeOnce(c: Command): number {
  const start = performance.now();
  const r = spawnSync(process.execPath, c.args, { cwd: ROOT, input: c.input ?? '', encoding: 'utf8', env: c.env ?? process.env });
  const ms = performance.now() - start;
  if (r.status !== 0) throw new Error(`${c.name} exited ${r.status}: ${r.stderr}`);
  // A fallback to tsx would measure the wrong thing.
  if (r.stderr.includes('running the TypeScript sources through tsx')) throw new Error(`${c.name}: ${r.stderr}`);
  return ms;
}

/** What `settle status` costs apart from start-up: its reads and report in this process, and its gRPC calls. */
async function statusRoundTrips(t: StatusTarget): Promise<{ ms: number; calls: number }> {
  let calls = 0;
  const start = performance.now();
  const reads = new GrpcTrajectoryReads(loadTemporalTarget({ address: t.address, namespace: t.namespace, taskQueue: t.taskQueue }));
  // Each read is one gRPC call (the sub-agents' listing one page here).
  const counting = new Proxy(reads, {
    get:
      (r, name: keyof TrajectoryReads) =>
      (...args: unknown[]) => {
        calls++;
        return (r[name] as (...a: unknown[]) => unknown).apply(r, args);
      },
  }) as TrajectoryReads;
  const report = await trajectoryStatusReport(counting, t.trajectoryId);
  reads.close();
  const ms = performance.now() - start;
  if (report.runStatus !== 'COMPLETED') throw new Error(`status bench: ${t.trajectoryId} is ${report.runStatus}`);
  return { ms, calls };
}

/** The start-up targets, by command (ms, on the median). */
const TARGETS_MS: Record<string, number> = { 'settle --help (checkout)': 400, 'settle key (checkout)': 300 };

export async function benchCliStartup(options: { runs?: number; status?: StatusTarget } = {}): Promise<Figure[]> {
  const runs = options.runs ?? 9;
  // The host's queue shapes every wall time here: the load when the runs began goes into the result beside its end.
  const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
  const list = commands(options.status);
  const times = new Map<string, number[]>(list.map((c) => [c.name, []]));
  const roundTrips: number[] = [];
  let calls = 0;
  for (const c of list) timeOnce(c); // warm the file cache; the first brings the compiled copy up to date
  for (let i = 0; i < runs; i++) {
    for (const c of list) times.get(c.name)!.push(timeOnce(c));
    if (options.status) {
      const r = await statusRoundTrips(options.status);
      roundTrips.push(r.ms);
      calls = r.calls;
    }
  }
  const base = times.get('node -e 0')!;
  const figures: Figure[] = [];
  for (const c of list) {
    const t = times.get(c.name)!;
    figures.push({
      group: 'cli',
      figure: `${c.name}: start-up wall time (median)`,
      value: Math.round(median(t)),
      unit: 'ms',
      detail: {
        min: Math.round(Math.min(...t)),
        median: Math.round(median(t)),
        runs,
        ...(c.name === 'node -e 0' ? { loadAtStart } : {}),
        ...(TARGETS_MS[c.name] ? target('≤', TARGETS_MS[c.name]!, median(t)) : {}),
      },
    });
    if (c.name !== 'node -e 0') {
      figures.push({
        group: 'cli',
        figure: `${c.name} / node -e 0 (median)`,
        value: Math.round((median(t) / median(base)) * 100) / 100,
        unit: '×',
        against: 'node -e 0',
        detail: { minRatio: Math.round((Math.min(...t) / Math.min(...base)) * 100) / 100 },
      });
    }
  }
  if (options.status) {
    const status = times.get('settle status (checkout)')!;
    figures.push({
      group: 'cli',
      figure: 'settle status: its round trips alone (a fresh channel, its reads and report in-process, median)',
      value: Math.round(median(roundTrips)),
      unit: 'ms',
      detail: { grpcCalls: calls, min: Math.round(Math.min(...roundTrips)), runs },
    });
    const beyond = median(status) - median(roundTrips);
    figures.push({
      group: 'cli',
      figure: 'settle status - its round trips (median): start-up',
      value: Math.round(beyond),
      unit: 'ms',
      detail: { beyondNode: Math.round(beyond - median(base)), ...target('≤', TARGETS_MS['settle --help (checkout)']!, beyond) },
    });
  }
  return figures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const f of await benchCliStartup()) console.log(`${f.figure.padEnd(64)} ${String(f.value).padStart(8)} ${f.unit}`);
}
