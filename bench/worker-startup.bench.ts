/**
 * Worker start-up: exec → the moment a workflow task waiting on the worker's queue is picked up
 * (its WorkflowTaskStarted event, stamped by the server on this host's clock), for the workers a
 * recovery waits for. Each run starts a workflow on a fresh task queue, execs the worker, reads
 * the task's start from history, then stops the worker with SIGTERM. Nothing is asserted.
 *
 * Sides, interleaved (a Williams design), one warm-up each (not counted, reported as `first`):
 *
 * - settle worker, built: `node dist/workers/worker.js` with the bundle the build ships
 *   (dist/workflow-bundle.js), as the packed package runs it.
 * - settle worker, sources through tsx: `node --import tsx workers/worker.ts` with the same
 *   bundle (SETTLE_WORKFLOW_BUNDLE), as `npm run worker` and the chaos harness start it.
 * - team worker: examples/team-tools compiled as its `npm run build` does, its SettlePlugin from
 *   the built `settle/worker` (this package's dist/, by self-reference), its bundle built once by
 *   its `npm run bundle` (src/build-bundle.ts) and given as WORKFLOW_BUNDLE.
 *
 * dist/ is built first (`npm run build`) when it is older than any runtime source.
 *
 * BENCH_WORKER_STARTUP_RUNS (default 9): counted runs per side.
 * BENCH_WORKER_BASELINE=/other/checkout (a built one, node_modules beside it): its built settle
 *   and team workers run as two more sides, each paired with this checkout's: before/after of a
 *   change in one run, as ratios per round.
 *
 * Target (issue #44): exec → polling ≤ 2 s with a pre-built bundle on a quiet host.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { runtimeSources } from '../bin/compile.js';
import { trajectoryStartOptions } from '../client/index';
import type { Figure } from './support/figures';
import { median, orders, round2, spread } from './support/stats';

const { EventType } = proto.temporal.api.enums.v1;
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TARGET_MS = 2_000;
/** A worker that has not picked up its task by then failed to start: the run is an error. */
const RUN_TIMEOUT_MS = 120_000;

export interface StartupStack {
  temporalAddress: string;
  namespace: string;
  databaseUrl: string;
  client: Client;
  workDir: string;
}

interface Side {
  name: string;
  /** Node arguments. */
  args: string[];
  env: NodeJS.ProcessEnv;
  workflow: 'settle' | 'team';
  /** The line the worker prints once it is about to poll. */
  ready: RegExp;
  /** For a paired ratio: the side this one is compared with. */
  against?: string;
  /** Counted against the target. */
  targeted: boolean;
}

interface Run {
  /** exec → WorkflowTaskStarted. */
  taskMs: number;
  /** exec → its ready line. */
  readyMs: number;
}

/** A checkout's built settle worker and team worker, ready to exec. */
interface BuiltCheckout {
  root: string;
  teamWorker: string;
  teamBundle: string;
}

export async function benchWorkerStartup(s: StartupStack, options: { runs?: number; log: (l: string) => void }): Promise<Figure[]> {
  const runs = options.runs ?? Number(process.env.BENCH_WORKER_STARTUP_RUNS ?? 9);
  const here = prepareCheckout(ROOT, options.log);
  const baselineRoot = process.env.BENCH_WORKER_BASELINE;
  const baseline = baselineRoot ? prepareCheckout(path.resolve(baselineRoot), options.log) : null;
  const workspaceRoot = path.join(s.workDir, 'startup-ws');
  fs.mkdirSync(workspaceRoot, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: s.temporalAddress,
    TEMPORAL_NAMESPACE: s.namespace,
    DATABASE_URL: s.databaseUrl,
    SETTLE_WORKSPACE_ROOT: workspaceRoot,
    SETTLE_LANES: '',
    SETTLE_WORKFLOW_BUNDLE: '',
    SETTLE_METRICS_PORT: '',
    NODE_OPTIONS: '',
  };
  const sides: Side[] = [
    ...builtSides(here, env, 'built', baseline ? 'baseline' : undefined),
    {
      name: 'settle worker, sources through tsx',
      args: ['--import', 'tsx', path.join(ROOT, 'workers', 'worker.ts')],
      env: { ...env, SETTLE_WORKFLOW_BUNDLE: path.join(ROOT, 'dist', 'workflow-bundle.js') },
      workflow: 'settle',
      ready: /settle worker: polling/,
      against: 'settle worker, built',
      targeted: false,
    },
    ...(baseline ? builtSides(baseline, env, 'baseline') : []),
  ];
  const loadAtStart = os.loadavg().map(round2);
  const times = new Map<string, Run[]>(sides.map((side) => [side.name, []]));
  const first = new Map<string, Run>();
  // The warm-up, one per side: also what a start after a while looks like (files partly cached).
  for (const side of sides) first.set(side.name, await startOnce(s, side, `warm-${side.name}`));
  const rounds = orders(sides);
  for (let i = 0; i < runs; i++) {
    for (const side of rounds[i % rounds.length]!) times.get(side.name)!.push(await startOnce(s, side, `${i}`));
    options.log(`worker start-up: round ${i + 1}/${runs}`);
  }
  const loadAtEnd = os.loadavg().map(round2);
  const figures: Figure[] = [];
  for (const side of sides) {
    const t = times.get(side.name)!;
    const task = spread(t.map((r) => r.taskMs));
    figures.push({
      group: 'worker-startup',
      figure: `${side.name}: exec → first workflow task picked up (median)`,
      value: Math.round(task.median),
      unit: 'ms',
      detail: {
        min: Math.round(task.min),
        max: Math.round(task.max),
        execToReadyLineMedian: Math.round(median(t.map((r) => r.readyMs))),
        first: Math.round(first.get(side.name)!.taskMs),
        runs,
        loadAtStart,
        loadAtEnd,
        ...(side.targeted ? { target: `≤ ${TARGET_MS}`, meetsTarget: task.median <= TARGET_MS } : {}),
      },
    });
  }
  for (const side of sides) {
    if (!side.against) continue;
    const x = times.get(side.name)!;
    const y = times.get(side.against)!;
    const ratios = x.map((r, i) => r.taskMs / y[i]!.taskMs);
    const r = spread(ratios);
    figures.push({
      group: 'worker-startup',
      figure: `${side.name} / ${side.against}: exec → first task, paired by round (median)`,
      value: round2(r.median),
      unit: '×',
      against: side.against,
      detail: { min: round2(r.min), max: round2(r.max), runs },
    });
  }
  return figures;
}

function builtSides(c: BuiltCheckout, env: NodeJS.ProcessEnv, label: 'built' | 'baseline', pairWith?: string): Side[] {
  const settle = `settle worker, ${label}`;
  const team = `team worker with SettlePlugin, ${label}`;
  return [
    {
      name: settle,
      // Its bundle: the one the build wrote beside it (dist/workflow-bundle.js), found by the worker itself.
      args: [path.join(c.root, 'dist', 'workers', 'worker.js')],
      env,
      workflow: 'settle',
      ready: /settle worker: polling/,
      ...(pairWith ? { against: `settle worker, ${pairWith}` } : {}),
      targeted: label === 'built',
    },
    {
      name: team,
      args: [c.teamWorker],
      env: { ...env, WORKFLOW_BUNDLE: c.teamBundle },
      workflow: 'team',
      ready: /billing worker: polling/,
      ...(pairWith ? { against: `team worker with SettlePlugin, ${pairWith}` } : {}),
      targeted: label === 'built',
    },
  ];
}

/**
 * Builds `root`'s dist/ when stale, compiles examples/team-tools into root/.settle/bench-team-tools
 * (inside the package, so `settle/worker` resolves to root/dist by self-reference) and builds its
 * workflow bundle once with its own build-bundle script.
 */
function prepareCheckout(root: string, log: (l: string) => void): BuiltCheckout {
  const bundle = path.join(root, 'dist', 'workflow-bundle.js');
  const built = fs.existsSync(bundle) ? fs.statSync(bundle).mtimeMs : 0;
  const newest = Math.max(...runtimeSources(root).map((f) => fs.statSync(path.join(root, f)).mtimeMs));
  if (built < newest) {
    log(`worker start-up: building ${root}dist (npm run build)`);
    sync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts', 'build.ts')], root);
  }
  const out = path.join(root, '.settle', 'bench-team-tools');
  fs.rmSync(out, { recursive: true, force: true });
  const sources = path.join(ROOT, 'examples', 'team-tools', 'src');
  const files = fs.readdirSync(sources).filter((f) => f.endsWith('.ts'));
  // esbuild's transform, file for file (what the example's tsc emits, without its type check).
  sync(
    path.join(ROOT, 'node_modules', '.bin', 'esbuild'),
    [
      ...files.map((f) => path.join(sources, f)),
      `--outdir=${out}`,
      '--format=esm',
      '--platform=node',
      '--target=node20',
      '--log-level=warning',
    ],
    root,
  );
  const teamBundle = path.join(out, 'workflow-bundle.js');
  sync(process.execPath, [path.join(out, 'build-bundle.js'), teamBundle], out);
  return { root, teamWorker: path.join(out, 'worker.js'), teamBundle };
}

function sync(file: string, args: string[], cwd: string): void {
  const r = spawnSync(file, args, { cwd, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  if (r.status !== 0) throw new Error(`${path.basename(file)} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
}

let seq = 0;

/** One start: a workflow waiting on a fresh queue, the worker exec'd, its first task's start read from history. */
async function startOnce(s: StartupStack, side: Side, label: string): Promise<Run> {
  const queue = `startup-${process.pid}-${seq++}`;
  const workflowId = `${queue}-${side.workflow}`;
  const handle =
    side.workflow === 'settle'
      ? await s.client.workflow.start('trajectoryWorkflow', trajectoryStartOptions(queue, workflowId, settleInput(s.workDir, workflowId)))
      : await s.client.workflow.start('billingWorkflow', {
          taskQueue: queue,
          workflowId,
          args: [{ customer: 'cus_1', amountCents: 1, ledger: path.join(s.workDir, `${workflowId}.ledger`) }],
        });
  const execAt = Date.now();
  const child = spawn(process.execPath, side.args, {
    cwd: ROOT,
    env: { ...side.env, TEMPORAL_TASK_QUEUE: queue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let readyAt = 0;
  const take = (b: Buffer) => {
    output = (output + b.toString()).slice(-8_000);
    if (!readyAt && side.ready.test(output)) readyAt = Date.now();
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const deadline = execAt + RUN_TIMEOUT_MS;
    for (;;) {
      const started = await taskStartedAt(s.client, workflowId);
      if (started !== null) return { taskMs: started - execAt, readyMs: (readyAt || Date.now()) - execAt };
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${side.name} (${label}) exited before it took its task:\n${output}`);
      if (Date.now() > deadline) throw new Error(`${side.name} (${label}): no task taken after ${RUN_TIMEOUT_MS} ms:\n${output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
    await handle.terminate('worker start-up bench: measured').catch(() => {});
  }
}

/** The server's time of the workflow's first WorkflowTaskStarted (ms since the epoch), or null. */
async function taskStartedAt(client: Client, workflowId: string): Promise<number | null> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const started = history.events?.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  if (!started?.eventTime) return null;
  return Number(started.eventTime.seconds ?? 0) * 1_000 + Math.floor((started.eventTime.nanos ?? 0) / 1e6);
}

/** A one-call trajectory (a read), valid input: what the settle worker's first task is about. */
function settleInput(workDir: string, id: string) {
  const workspace = path.join(workDir, 'startup-ws', id);
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(workspace, 'a.txt'), 'todo\n');
  return {
    workspace,
    turns: [
      { turn: 0, calls: [{ call_id: 'c0', tool: 'file_view', args: { path: path.join(workspace, 'a.txt'), offset: 1, limit: 10 } }] },
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { startStack } = await import('../stack/index');
  const { Client, Connection } = await import('@temporalio/client');
  const log = (l: string) => console.error(l);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-startup-'));
  const stack = await startStack({ log, postgres: { dataDir: path.join(workDir, 'pg'), ephemeral: true } });
  const connection = await Connection.connect({ address: stack.temporal.address });
  try {
    log(`worker start-up: load average ${os.loadavg().map(round2).join(' ')}`);
    const figures = await benchWorkerStartup(
      {
        temporalAddress: stack.temporal.address,
        namespace: stack.temporal.namespace,
        databaseUrl: stack.databaseUrl,
        client: new Client({ connection, namespace: stack.temporal.namespace }),
        workDir,
      },
      { log },
    );
    for (const f of figures) console.log(`${f.figure.padEnd(100)} ${String(f.value).padStart(8)} ${f.unit}  ${JSON.stringify(f.detail)}`);
  } finally {
    await connection.close();
    await stack.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}
