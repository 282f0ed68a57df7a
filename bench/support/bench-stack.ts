/**
 * The stack the end-to-end and scale benchmarks share: the low-latency Temporal dev server, an
 * embedded PostgreSQL with pg_stat_statements, and three worker processes — settle's own
 * (workers/worker.ts) twice, as shipped (queue `settle`: file_edit in the local lane, its
 * definition's default) and with the operator's override `SETTLE_LANES=file_edit=activity`
 * (queue `settle-activity`), and the plain baseline (bench/plain/worker.ts, queue `plain-bench`)
 * — each a child process so /proc can account its CPU and memory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import pg from 'pg';
import { startStack, type Stack } from '../../stack/index';
import { startPostgres, type PostgresHandle } from '../../stack/postgres';
import type { ServedTemporal } from '../../scripts/production-lane';
import { settleBundleOptions } from '../../workers/workflow-bundle';
import { PLAIN_TASK_QUEUE, PLAIN_WORKFLOWS_PATH } from '../plain/worker';
import { postmasterPid } from './proc';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SETTLE_ACTIVITY_QUEUE = 'settle-activity';

export interface BenchStack {
  stack: Stack;
  client: Client;
  /** A monitoring connection (pg_stat_*), separate from the workers' pools. */
  monitor: pg.Client;
  workDir: string;
  pids: { server: number; postgres: number; settleWorker: number; settleActivityWorker: number; plainWorker: number };
  /** settle's worker with each tool in its default lane (file_edit: local). */
  settleQueue: string;
  /** settle's worker with file_edit moved to the activity lane. */
  settleActivityQueue: string;
  plainQueue: string;
  stop(): Promise<void>;
}

export async function startBenchStack(options: { dynamicConfig?: Record<string, unknown>; log: (l: string) => void }): Promise<BenchStack> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-'));
  fs.chmodSync(workDir, 0o755);
  const postgresOptions = {
    dataDir: path.join(workDir, 'pg'),
    ephemeral: true,
    postgresFlags: ['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', ...extraPostgresFlags()],
  };
  const served = process.env.BENCH_TEMPORAL_SERVE;
  const stack = served
    ? await withServedTemporal(served, await startPostgres({ log: options.log, ...postgresOptions }), options.log)
    : await startStack({
        log: options.log,
        postgres: postgresOptions,
        ...(options.dynamicConfig ? { temporal: { dynamicConfig: options.dynamicConfig } } : {}),
      });
  const children: ChildProcess[] = [];
  let stopping = false;
  // A worker gone mid-run fails the bench later, on its pid: say when, how and what it last wrote.
  const onExit = (script: string, pid: number, how: string, tail: string) => {
    if (!stopping) options.log(`${script} (pid ${pid}) exited (${how}) while the bench ran; its last output:\n${tail}`);
  };
  const connection = await Connection.connect({ address: stack.temporal.address });
  // The superuser: it creates pg_stat_statements and reads every role's statistics.
  const monitor = new pg.Client({ connectionString: stack.postgres.adminUrl });
  const stop = async () => {
    stopping = true;
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : Promise.resolve())));
    await monitor.end().catch(() => {});
    await connection.close();
    await stack.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  };
  try {
    await monitor.connect();
    await monitor.query('create extension if not exists pg_stat_statements');
    const bundles = { settle: path.join(workDir, 'settle-bundle.js'), plain: path.join(workDir, 'plain-bundle.js') };
    const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m: string) => options.log(m) };
    fs.writeFileSync(bundles.settle, (await bundleWorkflowCode(settleBundleOptions(quiet))).code);
    fs.writeFileSync(bundles.plain, (await bundleWorkflowCode({ workflowsPath: PLAIN_WORKFLOWS_PATH, logger: quiet })).code);
    // Workspaces of the benchmarks live in workDir/ws (bench/e2e.ts): the settle worker's root.
    fs.mkdirSync(path.join(workDir, 'ws'), { recursive: true });
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: stack.temporal.address,
      DATABASE_URL: stack.databaseUrl,
      SETTLE_WORKSPACE_ROOT: path.join(workDir, 'ws'),
    };
    // SETTLE_LANES set on both: an operator's variable in the bench's own environment must not leak in.
    const settleWorker = await spawnWorker(
      'workers/worker.ts',
      { ...env, SETTLE_WORKFLOW_BUNDLE: bundles.settle, TEMPORAL_TASK_QUEUE: 'settle', SETTLE_LANES: '' },
      /settle worker:/,
      children,
      onExit,
    );
    const settleActivityWorker = await spawnWorker(
      'workers/worker.ts',
      { ...env, SETTLE_WORKFLOW_BUNDLE: bundles.settle, TEMPORAL_TASK_QUEUE: SETTLE_ACTIVITY_QUEUE, SETTLE_LANES: 'file_edit=activity' },
      /settle worker:/,
      children,
      onExit,
    );
    const plainWorker = await spawnWorker(
      'bench/plain/worker.ts',
      { ...env, PLAIN_WORKFLOW_BUNDLE: bundles.plain, PLAIN_TASK_QUEUE },
      /plain worker: running/,
      children,
      onExit,
    );
    return {
      stack,
      client: new Client({ connection, namespace: stack.temporal.namespace }),
      monitor,
      workDir,
      pids: {
        server: stack.temporal.pid!,
        postgres: postmasterPid(stack.postgres.dataDir!),
        settleWorker: settleWorker.pid!,
        settleActivityWorker: settleActivityWorker.pid!,
        plainWorker: plainWorker.pid!,
      },
      settleQueue: 'settle',
      settleActivityQueue: SETTLE_ACTIVITY_QUEUE,
      plainQueue: PLAIN_TASK_QUEUE,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * BENCH_TEMPORAL_SERVE=<serve.json>: a Temporal server someone else runs — the production lane's
 * server on PostgreSQL (`bash scripts/production-lane.sh --serve`), which persists every history
 * write durably where the dev server keeps it in memory. Its CPU is accounted by its pid; it is
 * not stopped with the bench.
 */
async function withServedTemporal(file: string, postgres: PostgresHandle, log: (l: string) => void): Promise<Stack> {
  const served = JSON.parse(fs.readFileSync(file, 'utf8')) as ServedTemporal;
  log(`temporal: served by ${file} on ${served.address} (pid ${served.serverPid})`);
  return {
    temporal: {
      address: served.address,
      namespace: served.namespace,
      uiUrl: null,
      source: `external (${file})`,
      pid: served.serverPid,
      dynamicConfig: served.dynamicConfig,
      stop: async () => {},
    },
    postgres,
    databaseUrl: postgres.url,
    stop: () => postgres.stop(),
  };
}

/**
 * BENCH_POSTGRES_FLAGS: more server settings for a diagnostic run, e.g. `-c synchronous_commit=off`
 * (with SETTLE_RECORD_DURABILITY=none: the settle worker refuses a crash-unsafe record store otherwise).
 */
export function extraPostgresFlags(): string[] {
  return (process.env.BENCH_POSTGRES_FLAGS ?? '').split(/\s+/).filter(Boolean);
}

const TAIL_CHARS = 4_000;

async function spawnWorker(
  script: string,
  env: NodeJS.ProcessEnv,
  readyLine: RegExp,
  children: ChildProcess[],
  onExit: (script: string, pid: number, how: string, tail: string) => void,
): Promise<ChildProcess> {
  // BENCH_CPU_PROF_DIR: each worker writes a V8 CPU profile there when it stops (node --cpu-prof).
  const profile = process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`] : [];
  // BENCH_WORKER_NODE_FLAGS: more Node flags for both workers in a diagnostic run (e.g. `--trace-gc`).
  const flags = (process.env.BENCH_WORKER_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...profile, ...flags, '--import', 'tsx', path.join(ROOT, script)], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  // Only until the worker is ready is its output read for the ready line; after that it is drained
  // and only a bounded tail is kept (for an error). Appending every log line to one string and
  // matching a regex over it flattens the whole string per chunk: quadratic CPU in this process,
  // which shares the cores with the side being measured (the settle worker logs two lines a call).
  let output = '';
  let ready = false;
  const take = (b: Buffer) => {
    output = (output + b.toString()).slice(-TAIL_CHARS);
  };
  // BENCH_WORKER_OUTPUT_DIR: each worker's whole output is also copied to <dir>/<pid>.log (diagnostics).
  const copyTo = process.env.BENCH_WORKER_OUTPUT_DIR;
  if (copyTo) {
    const file = fs.createWriteStream(path.join(copyTo, `${child.pid}.log`));
    child.stdout.pipe(file);
  }
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      if (ready) return;
      take(b);
      if (readyLine.test(output)) {
        ready = true;
        resolve();
      }
    });
    child.stderr.on('data', take);
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready: ${output}`)));
  });
  child.once('exit', (code, signal) => onExit(script, child.pid!, signal ?? `code ${code}`, output));
  return child;
}
