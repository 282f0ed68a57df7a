/**
 * `npm run chaos` — crash recovery under real faults, measured.
 *
 *   npm run chaos                       every scenario (chaos/scenarios.ts FULL), ~15 min
 *   npm run chaos -- --quick            a short fixed set (QUICK), ~4 min
 *   npm run chaos -- --production       the production topology's faults: failover, pooler, host death, rolling deploy
 *                                       (chaos/production-scenarios.ts), on two hosts, a Temporal server on PostgreSQL
 *                                       over mTLS, the record store over TLS
 *   npm run chaos -- --production --plain  the same on the Temporal dev server, without TLS
 *   npm run chaos -- --only a,b         these scenarios
 *   npm run chaos -- --seed 7           another fault schedule and workload
 *   npm run chaos -- --histories <dir>  also write every trajectory's history there (JSON); a trajectory
 *                                       that does not complete always keeps it in .settle/chaos-evidence/<run>/
 *   npm run chaos -- --lane local       one lane only (default: every scenario in both lanes)
 *
 * Every scenario runs twice, once a lane (chaos/harness/lanes.ts): its short tools moved to the
 * activity lane, then in the local lane. Each run gets its own PostgreSQL, Temporal server and worker processes. Effects are
 * counted from the workspaces' files, never from settle's records. Prints the table and writes it
 * to chaos/results.json and chaos/results.md (results-quick.*, results-production.*, results-production-plain.*). Exits 1 if any
 * scenario shows a duplicate, a lost effect, a call left in doubt or a failed trajectory.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { build } from 'esbuild';
import { bundleWorkflowCode } from '@temporalio/worker';
import { settleBundleOptions } from '../workers/workflow-bundle';
import { installRuntime } from '../workers/runtime';
import { FULL, QUICK } from './scenarios';
import { PRODUCTION, PRODUCTION_PLAIN } from './production-scenarios';
import { PRODUCTION_TOPOLOGY } from './record-store-scenarios';
import { runScenario } from './harness/scenario';
import type { ScenarioResult } from './harness/scenario-types';
import { markdownTable, textTable, verdict } from './harness/report';
import { inLane, LANES, runName } from './harness/lanes';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.dirname(HERE);

async function main(): Promise<void> {
  const opts = new Command()
    .name('npm run chaos --')
    .option('--quick', 'the short fixed set', false)
    .option(
      '--production',
      'the production topology: two hosts, replicated record store behind a pooler, Temporal on PostgreSQL over mTLS, TLS to the record store; failover, pooler restart, host death, rolling deploy',
      false,
    )
    .option('--plain', 'with --production: on the Temporal dev server, without TLS', false)
    .option('--only <names>', 'comma-separated scenario names')
    .option('--seed <n>', 'seed of the fault schedule and workload', '1')
    .option('--out <dir>', 'where results.json and results.md go', HERE)
    .option('--histories <dir>', "write every trajectory's workflow history there (JSON)")
    .option('--lane <lane>', 'run the scenarios in this lane only: local or activity (default: both)')
    .parse()
    .opts<{
      quick: boolean;
      production: boolean;
      plain: boolean;
      only?: string;
      seed: string;
      out: string;
      histories?: string;
      lane?: string;
    }>();
  if (opts.quick && opts.production) {
    console.error('--quick and --production: choose one set');
    process.exit(2);
  }
  if (opts.plain && !opts.production) {
    console.error('--plain: only with --production');
    process.exit(2);
  }
  const catalog = opts.production ? (opts.plain ? PRODUCTION_PLAIN : PRODUCTION) : opts.quick ? QUICK : FULL;
  const wanted = opts.only?.split(',').map((s) => s.trim());
  const unknown = wanted?.filter((n) => !catalog.some((s) => s.name === n)) ?? [];
  if (unknown.length) {
    console.error(`--only: unknown scenario ${unknown.join(', ')} (known: ${catalog.map((s) => s.name).join(', ')})`);
    process.exit(2);
  }
  const lanes = LANES.filter((l) => opts.lane === undefined || l === opts.lane);
  if (lanes.length === 0) {
    console.error(`--lane: must be local or activity (got ${opts.lane})`);
    process.exit(2);
  }
  // Both lanes of a scenario one after the other: a partial run still pairs them.
  const scenarios = (wanted ? catalog.filter((s) => wanted.includes(s.name)) : catalog).flatMap((s) => lanes.map((l) => inLane(s, l)));
  const seed = Number(opts.seed);
  if (!Number.isSafeInteger(seed)) {
    console.error(`--seed: must be an integer (got ${opts.seed})`);
    process.exit(2);
  }

  const loadAtStart = os.loadavg()[0]!;
  installRuntime('ERROR');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-chaos-'));
  fs.chmodSync(dir, 0o755); // the postgres user must reach its data directory
  const log = (line: string) => console.error(`[chaos] ${line}`);
  log(`bundling the workflow code; working in ${dir}`);
  const bundle = await bundleWorkflowCode(settleBundleOptions(quiet));
  const workflowBundlePath = path.join(dir, 'workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);
  // Workers restart after every kill: a plain-JavaScript entry starts them in a fraction of tsx's time.
  // It lives in the checkout so that its package imports resolve from node_modules.
  const workerEntry = path.join(REPO, '.settle', `chaos-worker-${process.pid}.mjs`);
  await build({
    entryPoints: [path.join(REPO, 'workers', 'worker.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile: workerEntry,
    logLevel: 'warning',
  });

  const team = scenarios.some((s) => s.workload === 'team-tools') ? await buildTeamTools(dir, log) : undefined;

  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    log(
      `${runName(scenario)}: ${scenario.description} — ${scenario.orchestrated + scenario.scripted} trajectories, ${scenario.workers} workers` +
        `${scenario.laneOverrides ? `, SETTLE_LANES=${scenario.laneOverrides}` : ''}`,
    );
    const result = await runScenario(scenario, {
      dir,
      workflowBundlePath,
      workerEntry,
      seed,
      log,
      ...(team ? { team } : {}),
      ...(opts.histories ? { historiesDir: path.resolve(opts.histories, runName(scenario)) } : {}),
    });
    results.push(result);
    log(`${runName(scenario)}: done in ${result.durationS} s — ${verdict(result)}`);
    for (const p of result.problems.slice(0, 20)) log(`  ${p}`);
  }

  console.log(textTable(results));
  const name = opts.production
    ? opts.plain
      ? 'results-production-plain'
      : 'results-production'
    : opts.quick
      ? 'results-quick'
      : 'results';
  const meta = {
    generatedAt: new Date().toISOString(),
    mode: opts.production ? 'production' : opts.quick ? 'quick' : 'full',
    seed,
    host: `${os.cpus().length} cores, Node ${process.version}`,
    // Figures from a shared machine mean little without its load (1-minute load average).
    load: `${loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0]!.toFixed(1)} at the end`,
    commit: commitOf(REPO),
    // A partial run says so in its header.
    ...(wanted ? { only: wanted.join(',') } : {}),
    ...(opts.lane ? { lane: opts.lane } : {}),
    ...(opts.production ? { topology: opts.plain ? 'Temporal dev server, no TLS (--plain)' : PRODUCTION_TOPOLOGY } : {}),
    ...(opts.plain ? { plain: true } : {}),
  };
  fs.mkdirSync(opts.out, { recursive: true });
  fs.writeFileSync(path.join(opts.out, `${name}.json`), JSON.stringify({ ...meta, results }, null, 2) + '\n');
  fs.writeFileSync(path.join(opts.out, `${name}.md`), markdownTable(results, meta));
  log(`wrote ${path.join(opts.out, `${name}.json`)} and ${name}.md`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(workerEntry, { force: true });
  if (team) fs.rmSync(team.workerEntry, { force: true });
  process.exit(results.every((r) => verdict(r) === 'ok') ? 0 : 1);
}

/**
 * examples/team-tools as the chaos workers run it: its own worker entry and its own workflows,
 * importing settle from this checkout's sources (`settle/worker` → api/worker.ts) rather than a
 * packed copy, so the run measures the code under test. The entry lives in the checkout so that
 * its package imports resolve from node_modules.
 */
async function buildTeamTools(dir: string, log: (line: string) => void): Promise<{ workerEntry: string; workflowBundlePath: string }> {
  const source = path.join(REPO, 'examples', 'team-tools', 'src');
  const api = (entry: string) => path.join(REPO, 'api', `${entry}.ts`);
  log('bundling examples/team-tools: its worker and its workflows');
  const workerEntry = path.join(REPO, '.settle', `chaos-team-worker-${process.pid}.mjs`);
  await build({
    entryPoints: [path.join(source, 'worker.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile: workerEntry,
    logLevel: 'warning',
    plugins: [
      {
        name: 'settle-from-sources',
        setup(b) {
          b.onResolve({ filter: /^settle\/(worker|workflow|client|testing)$/ }, (args) => ({
            path: api(args.path.slice('settle/'.length)),
          }));
        },
      },
    ],
  });
  const bundle = await bundleWorkflowCode({
    workflowsPath: path.join(source, 'workflows.ts'),
    logger: quiet,
    webpackConfigHook: (config) => ({
      ...config,
      resolve: { ...config.resolve, alias: { ...(config.resolve?.alias as object), 'settle/workflow$': api('workflow') } },
    }),
  });
  const workflowBundlePath = path.join(dir, 'team-workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);
  return { workerEntry, workflowBundlePath };
}

/** The checkout's commit (with `+changes` when the tree differs from it), or `unknown`. */
function commitOf(dir: string): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
    return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? '+changes' : ''}`;
  } catch {
    return 'unknown';
  }
}

const quiet = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (message: string) => console.error(message),
};

main().catch((err) => {
  console.error(`chaos: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
