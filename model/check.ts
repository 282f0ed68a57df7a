/**
 * `npm run model-check`: checks model/settle.pml exhaustively with SPIN (docs/model-checking.md).
 *
 * 1. The correct model, in each configuration of bounds: every state is explored and no property
 *    is violated (assertions, invalid end states). Prints states, memory and time per configuration.
 * 2. Every mutation: SPIN must find a counterexample; the trail is replayed to name the property.
 * 3. Variants the model proves harmless (defences in depth): must still pass.
 *
 * Exits non-zero if the correct model fails, a search is incomplete, or a mutation is not caught.
 * `--canary` injects a mutation into the correct model, once per tool (CANARIES), and runs only
 * those: each must fail (CI checks
 * that the exit code tells the truth). `SETTLE_MODEL_FLAGS="-DX ..."` adds flags to every run.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MODEL_DIR = path.dirname(fileURLToPath(import.meta.url));
const MODEL = path.join(MODEL_DIR, 'settle.pml');
const WORK = path.resolve(MODEL_DIR, '..', '.settle', 'model-check');

interface Bounds {
  name: string;
  flags: string[];
}

/** Configurations of the correct model; each one is explored exhaustively. */
const BOUNDS: Bounds[] = [
  { name: 'file_edit · 1 run, an abandoned attempt (zombie)', flags: ['-DNRUNS=1', '-DMAX_ABANDON=1'] },
  { name: 'file_edit · 2 runs of the key', flags: ['-DNRUNS=2', '-DMAX_ABANDON=0'] },
  { name: 'file_edit · 1 run, planning may fail (no intent)', flags: ['-DNRUNS=1', '-DMAX_ABANDON=1', '-DPLAN_FAILS'] },
  { name: 'bash_execute · 1 run, an abandoned attempt (zombie)', flags: ['-DTOOL_FENCED=0', '-DNRUNS=1', '-DMAX_ABANDON=1'] },
  { name: 'bash_execute · 2 runs of the key', flags: ['-DTOOL_FENCED=0', '-DNRUNS=2', '-DMAX_ABANDON=0'] },
  {
    name: 'bash_execute · 1 run, retries may be refused (a dead holder never retried)',
    flags: ['-DTOOL_FENCED=0', '-DNRUNS=1', '-DMAX_ABANDON=0', '-DDENIALS'],
  },
  { name: 'file_edit · 1 run, retries may be refused (a dead holder never retried)', flags: ['-DNRUNS=1', '-DMAX_ABANDON=0', '-DDENIALS'] },
];

interface Mutation {
  flag: string;
  /** What the switch changes, in the code's terms. */
  what: string;
  flags?: string[];
  /** The property the counterexample must violate (when the others are switched off). */
  expect?: string;
}

/** Each must yield a counterexample. */
const MUTATIONS: Mutation[] = [
  { flag: 'MUT_RELEASE_ON_EXCEPTION', what: 'any exception releases the key (NOT_EXECUTED) instead of marking it IN_DOUBT' },
  { flag: 'MUT_SKIP_LOCAL_LEASE_CHECK', what: 'no assertLeaseHeld() before the effect' },
  {
    flag: 'MUT_SKIP_LOCAL_LEASE_CHECK NO_P3',
    what: 'the same, P3 unchecked: a COMPLETED record names a generation that did not apply the effect',
    expect: 'P2',
  },
  { flag: 'MUT_SKIP_LOCAL_LEASE_CHECK NO_P2 NO_P3', what: 'the same, P2 and P3 unchecked: the effect happens twice', expect: 'P1' },
  { flag: 'MUT_DRIFT_EXCEEDS_MARGIN', what: 'the database lease may lapse while the local clock still shows it held' },
  { flag: 'MUT_UNFENCED_RELEASE', what: 'releaseNoEffect not fenced by generation' },
  { flag: 'MUT_RENEW_AFTER_LAPSE MUT_RENEW_NO_GEN', what: 'renewal after a local lapse AND renewStatement not fenced by generation' },
  { flag: 'MUT_PROBE_NO_FENCE', what: 'the file_edit probe does not withdraw the prepared edit before looking' },
  {
    flag: 'MUT_PROBE_TRUSTS_FILES',
    what: 'the bash_execute probe reads the run directory instead of the start row: no exit marker taken as never started',
    flags: ['-DTOOL_FENCED=0'],
  },
  {
    flag: 'MUT_PROBE_TRUSTS_FILES NO_P2 NO_P3',
    what: 'the same, P2 and P3 unchecked: the command runs twice',
    flags: ['-DTOOL_FENCED=0'],
    expect: 'P1',
  },
  { flag: 'MUT_CLAIM_TAKES_DOUBT', what: 'a claim takes an IN_DOUBT record like a NOT_EXECUTED one' },
  {
    flag: 'MUT_OPERATOR_UNFENCED',
    what: "the operator's verdict settles whatever generation is IN_DOUBT when it is written (the code before this change)",
  },
  { flag: 'MUT_GIVE_UP_ON_UNKNOWN', what: 'the run counts a probe that says unknown as not executed' },
  { flag: 'MUT_VERDICT_ANY_GEN', what: "a waiting run takes an operator's verdict given for another generation" },
  { flag: 'MUT_NO_SWEEPER', what: 'no lease sweeper: only a new claim turns a lapsed lease IN_DOUBT', flags: ['-DDENIALS'], expect: 'P7' },
  {
    flag: 'MUT_DENIED_ENDS',
    what: "a refused attempt ends the call as denied whatever its key's record says",
    flags: ['-DDENIALS'],
    expect: 'P5',
  },
  { flag: 'MUT_EAGER_RETENTION', what: 'retention purges settled records while runs or executors of the key may still act' },
  {
    flag: 'MUT_EAGER_RETENTION MUT_NO_SWEEPER',
    what: 'the same, searched without the sweeper (whose moves the search tries first, meeting P3 before P6): a run probes a purged record',
    expect: 'P6',
  },
  { flag: 'MUT_PURGE_IN_DOUBT', what: 'retention purges IN_DOUBT records' },
  { flag: 'PROBE_FALSE_NEGATIVE', what: 'assumption dropped: a probe may say not applied although the effect happened' },
  { flag: 'OPERATOR_CARELESS', what: "assumption dropped: an operator settles while the generation's executor may still act" },
];

/** Changes the model proves harmless within its bounds (another defence covers them); must pass. */
const HARMLESS: Mutation[] = [
  { flag: 'MUT_UNFENCED_COMPLETE', what: 'complete not fenced by generation (an executor completes only after its own effect)' },
  { flag: 'MUT_RENEW_AFTER_LAPSE', what: 'renewal after a local lapse (the renewal is fenced by generation and state)' },
  { flag: 'MUT_RENEW_NO_GEN', what: 'renewStatement not fenced by generation (a keeper whose lease lapsed locally never renews)' },
];

/** `--canary`: a configuration of the correct model and the mutation injected into it. */
const CANARIES: { bounds: Bounds; flag: string }[] = [
  { bounds: BOUNDS[1]!, flag: 'MUT_RELEASE_ON_EXCEPTION' },
  { bounds: BOUNDS[4]!, flag: 'MUT_PROBE_TRUSTS_FILES' },
];

/** Bounds for mutation searches (a search stops at its first counterexample): both runs. */
const MUTATION_BOUNDS = ['-DNRUNS=2', '-DMAX_ABANDON=0'];
const HARMLESS_BOUNDS = ['-DNRUNS=1', '-DMAX_ABANDON=1'];

interface PanResult {
  errors: number;
  states: number;
  transitions: number;
  memoryMb: number;
  seconds: number;
  complete: boolean;
  output: string;
  dir: string;
  flags: string[];
}

const extra = (process.env.SETTLE_MODEL_FLAGS ?? '').split(/\s+/).filter(Boolean);

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error)
    throw new Error(
      `${cmd}: ${r.error.message}${(r.error as NodeJS.ErrnoException).code === 'ENOENT' ? ' (install the Debian package spin, and gcc)' : ''}`,
    );
  // pan exits non-zero when it finds an error; the caller reads its report.
  if (cmd !== './pan' && r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stdout}${r.stderr}`);
  return `${r.stdout}${r.stderr}`;
}

/** `optimize`: -O2 pays off for the big exhaustive searches; -O0 compiles three times faster. */
function verify(name: string, flags: string[], optimize = false): PanResult {
  const all = [...flags, ...extra];
  const dir = path.join(WORK, name.replace(/[^A-Za-z0-9_.-]+/g, '_'));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(MODEL, path.join(dir, 'settle.pml'));
  run('spin', [...all, '-a', 'settle.pml'], dir);
  // SAFETY: assertions and end states (no never claim); COLLAPSE: exact state compression;
  // MEMLIM: fail rather than swap on a shared machine.
  run('gcc', [optimize ? '-O2' : '-O0', '-w', '-DSAFETY', '-DCOLLAPSE', '-DVECTORSZ=2048', '-DMEMLIM=6000', '-o', 'pan', 'pan.c'], dir);
  const output = run('./pan', ['-m100000', '-w24'], dir);
  const num = (re: RegExp) => Number(re.exec(output)?.[1] ?? NaN);
  return {
    errors: num(/errors: (\d+)/),
    states: num(/(\d+) states, stored/),
    transitions: num(/(\d+) transitions \(/),
    memoryMb: num(/([\d.]+)\s+total actual memory usage/),
    seconds: num(/elapsed time ([\d.e+]+) seconds/),
    // An exhaustive search ends without "max search depth too small" and without running out of memory.
    complete: !/max search depth too small|out of memory|reached -DMEMLIM/i.test(output),
    output,
    dir,
    flags: all,
  };
}

/** Replays the trail and returns what was violated (the model's PROPERTY lines, or pan's own). */
function counterexample(r: PanResult): string {
  const replay = run('spin', [...r.flags, '-t', 'settle.pml'], r.dir);
  const property = /PROPERTY VIOLATED: (.*)/.exec(replay)?.[1];
  if (property) return property.trim();
  const pan = /pan:1: (.*?) \(at depth/.exec(r.output)?.[1];
  return pan ?? 'error (see the trail)';
}

const fmt = (r: PanResult) =>
  `${r.states.toLocaleString('en')} states, ${r.transitions.toLocaleString('en')} transitions, ${r.memoryMb.toFixed(0)} MB, ${r.seconds.toFixed(1)} s`;

function main(): number {
  const canary = process.argv.includes('--canary');
  let failures = 0;
  const started = Date.now();
  console.log(`model-check: ${path.relative(process.cwd(), MODEL)} with ${run('spin', ['-V'], MODEL_DIR).trim()}`);
  if (extra.length) console.log(`extra flags: ${extra.join(' ')}`);

  const runs = canary ? CANARIES : BOUNDS.map((bounds) => ({ bounds, flag: '' }));
  console.log(
    canary
      ? `\n== canary: the correct model with ${CANARIES.map((c) => c.flag).join(', ')} injected (each must FAIL)`
      : '\n== the protocol (exhaustive)',
  );
  for (const { bounds: b, flag } of runs) {
    const r = verify(`correct-${b.name}`, [...b.flags, ...(flag ? [`-D${flag}`] : [])], true);
    const ok = r.errors === 0 && r.complete;
    if (!ok) failures++;
    console.log(`${ok ? 'PASS' : 'FAIL'}  ${b.name}: ${fmt(r)}`);
    if (ok)
      console.log(
        "      P1 at most once · P2 completed ⇒ exactly once · P3 no effect recorded NOT_EXECUTED · P4 IN_DOUBT left only by probe/operator/same generation · P5 no silent end (+ valid end states) · P6 retention · P7 a dead holder's lapsed lease reaches IN_DOUBT: hold",
      );
    else if (r.errors > 0)
      console.log(`      counterexample: ${counterexample(r)}\n      trail: cd ${r.dir} && spin -t -p ${r.flags.join(' ')} settle.pml`);
    else console.log('      search incomplete (depth or memory bound): raise -m / MEMLIM');
  }
  if (canary) {
    console.log(
      `\n${failures === CANARIES.length ? 'canary ok: the mutated model failed' : 'CANARY NOT CAUGHT'} (${((Date.now() - started) / 1000).toFixed(0)} s)`,
    );
    return failures ? 1 : 0;
  }

  console.log('\n== mutations (each must yield a counterexample)');
  for (const m of MUTATIONS) {
    const flags = m.flag.split(' ').map((f) => `-D${f}`);
    const r = verify(m.flag.replace(/ /g, '+'), [...MUTATION_BOUNDS, ...(m.flags ?? []), ...flags]);
    const violated = r.errors > 0 ? counterexample(r) : '';
    const caught = r.errors > 0 && (!m.expect || violated.startsWith(m.expect));
    if (!caught) failures++;
    console.log(`${caught ? 'CAUGHT' : 'MISSED'}  ${m.flag}: ${m.what}${m.expect ? ` (must violate ${m.expect})` : ''}`);
    console.log(
      r.errors > 0
        ? `        ${violated} (${r.states.toLocaleString('en')} states)\n        trail: cd ${path.relative(process.cwd(), r.dir)} && spin -t -p ${r.flags.join(' ')} settle.pml`
        : `        no counterexample in ${fmt(r)}`,
    );
  }

  console.log('\n== proven harmless within the bounds (must pass)');
  for (const m of HARMLESS) {
    const r = verify(m.flag, [...HARMLESS_BOUNDS, `-D${m.flag}`]);
    const ok = r.errors === 0 && r.complete;
    if (!ok) failures++;
    console.log(`${ok ? 'PASS' : 'FAIL'}  ${m.flag}: ${m.what}: ${fmt(r)}`);
    if (!ok && r.errors > 0) console.log(`      counterexample: ${counterexample(r)}`);
  }

  console.log(`\nmodel-check: ${failures ? `${failures} FAILED` : 'all passed'} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return failures ? 1 : 0;
}

try {
  process.exitCode = main();
} catch (err) {
  console.error(`model-check: ${(err as Error).message}`);
  process.exitCode = 2;
}
