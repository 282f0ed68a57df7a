/**
 * `npm run bench:sandbox` — what a trajectory's workflow sandbox costs to start, in CPU time (so
 * a loaded machine changes it little): the settle bundle against the plain baseline's.
 *
 * With Temporal's reusable V8 context (the default) a worker evaluates the bundle's script once,
 * but every workflow gets a fresh module cache: each trajectory runs the top level of every module
 * its workflow imports again — except the modules the bundle preloads (workers/workflow-bundle.ts:
 * zod, our schemas and core code), which the worker evaluates once into a cache every workflow
 * shares and then deep-freezes. This evaluates each bundle in one V8 context the way
 * @temporalio/worker/lib/workflow/reusable-vm.js does — the script, then the preload, then the
 * shared modules and the context's own globals deep-frozen (same deepFreeze), then for each
 * simulated trajectory a fresh cache and `importWorkflows()` — and reports the median CPU per
 * trajectory and the modules that cost most (their own top level, children excluded; minimum
 * over trajectories). For settle it also times the validation and key derivation a 10-call
 * scripted trajectory does (input contract, each call's envelope and `file_edit` arguments, its
 * key), and the same without the preload (every module fresh per trajectory: what the worker did
 * before), for comparison. The once-per-thread preload is reported too.
 */
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { settleBundleOptions } from '../workers/workflow-bundle';
import { PLAIN_WORKFLOWS_PATH } from './plain/worker';
import type { Figure } from './support/figures';
import { reusableSandbox, type Module } from './support/reusable-vm';

const TRAJECTORIES = 80;
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const CALL_SITE = '__webpack_modules__[moduleId].call(module.exports, module, module.exports, __webpack_require__);';
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

interface Sandbox {
  module(id: string): Module | undefined;
  run(code: string): unknown;
  /** Own top-level time per module id, of the last trajectory. */
  selfMs: Map<string, number>;
  /** CPU of the once-per-thread part: the bundle's script, the preload and the freeze. */
  startMs: number;
  nextTrajectory(): void;
}

function sandbox(bundle: string, preload: boolean): Sandbox {
  if (!bundle.includes(CALL_SITE)) throw new Error('unexpected bundle layout (webpack module call site not found)');
  // Time each module's own top level: its evaluation minus that of the modules it requires.
  const timed = bundle.replace(
    CALL_SITE,
    `{ const s = globalThis.__bench; const t0 = performance.now(); s.stack.push(0);
       ${CALL_SITE}
       const dt = performance.now() - t0; const children = s.stack.pop();
       if (s.stack.length) s.stack[s.stack.length - 1] += dt;
       s.self.set(moduleId, (s.self.get(moduleId) ?? 0) + dt - children); }`,
  );
  const bench = { stack: [] as number[], self: new Map<string, number>() };
  const t0 = cpuMs();
  const s = reusableSandbox(timed, { preload, globals: { __bench: bench } });
  const startMs = cpuMs() - t0;
  return {
    module: (id) => s.module(id),
    run: (code) => s.run(code),
    selfMs: bench.self,
    startMs,
    nextTrajectory() {
      s.nextWorkflow();
      bench.self.clear();
    },
  };
}

function measure(bundle: string, options: { preload: boolean; work?: (s: Sandbox) => void }) {
  const s = sandbox(bundle, options.preload);
  const importMs: number[] = [];
  const workMs: number[] = [];
  const minSelf = new Map<string, number>();
  for (let i = 0; i < TRAJECTORIES; i++) {
    s.nextTrajectory();
    let t = cpuMs();
    s.run('__TEMPORAL__.importWorkflows()');
    importMs.push(cpuMs() - t);
    if (options.work) {
      t = cpuMs();
      options.work(s);
      workMs.push(cpuMs() - t);
    }
    if (i >= TRAJECTORIES / 2) for (const [id, ms] of s.selfMs) minSelf.set(id, Math.min(minSelf.get(id) ?? Infinity, ms));
  }
  // Median of the second half (the first trajectories also warm the shared code).
  const median = (xs: number[]) => xs.slice(TRAJECTORIES / 2).sort((a, b) => a - b)[Math.floor(xs.length / 4)] ?? NaN;
  const top = [...minSelf]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([id, ms]) => ({ module: id, ms: Math.round(ms * 100) / 100 }));
  return {
    startMs: s.startMs,
    importMs: median(importMs),
    workMs: options.work ? median(workMs) : null,
    firstWorkMs: workMs[0] ?? null,
    top,
  };
}

/** The checks a 10-call scripted trajectory of file edits runs in workflow code. */
function scriptedTrajectory(s: Sandbox): void {
  const exportsOf = (id: string) => {
    const m = s.module(id);
    if (!m) throw new Error(`module ${id} not loaded`);
    return m.exports as unknown;
  };
  const { parseArgs } = exportsOf('./core/validation.ts') as { parseArgs: (schema: unknown, value: unknown, root?: string) => unknown };
  const { TrajectoryInputSchema, ProposedCallSchema } = exportsOf('./core/trajectory-input.ts') as Record<string, () => unknown>;
  const { CATALOG } = exportsOf('./core/tools/catalog.ts') as { CATALOG: Record<string, { args: () => unknown }> };
  const { deriveKey } = exportsOf('./core/key.ts') as { deriveKey: (call: unknown) => string };
  const edits = Array.from({ length: 10 }, (_, i) => ({
    path: '/srv/ws/notes.txt',
    old_str: `line ${i}: todo`,
    new_str: `line ${i}: done`,
  }));
  const input = {
    workspace: '/srv/ws',
    turns: edits.map((args, i) => ({ turn: i, calls: [{ call_id: `c${i}`, tool: 'file_edit', args }] })),
  };
  parseArgs(TrajectoryInputSchema!(), input, 'input');
  for (const turn of input.turns) {
    for (const call of turn.calls) {
      parseArgs(ProposedCallSchema!(), call, '');
      const args = parseArgs(CATALOG[call.tool]!.args(), call.args);
      deriveKey({ trajectoryId: 'bench-sandbox', turn: turn.turn, callId: call.call_id, tool: call.tool, args });
    }
  }
}

export async function benchSandboxStartup(): Promise<Figure[]> {
  const settleBundle = (await bundleWorkflowCode(settleBundleOptions(quiet))).code;
  const settle = measure(settleBundle, { preload: true, work: scriptedTrajectory });
  const unshared = measure(settleBundle, { preload: false, work: scriptedTrajectory });
  const plain = measure((await bundleWorkflowCode({ workflowsPath: PLAIN_WORKFLOWS_PATH, logger: quiet })).code, { preload: true });
  const r2 = (x: number | null) => (x === null ? NaN : Math.round(x * 100) / 100);
  return [
    {
      group: 'sandbox',
      figure: 'settle: module evaluation per trajectory (CPU)',
      value: r2(settle.importMs),
      unit: 'ms',
      detail: { trajectories: TRAJECTORIES, costliestModules: settle.top },
    },
    {
      group: 'sandbox',
      figure: 'settle: validation + keys of a 10-call trajectory (CPU)',
      value: r2(settle.workMs),
      unit: 'ms',
      detail: { firstTrajectoryMs: r2(settle.firstWorkMs) },
    },
    {
      group: 'sandbox',
      figure: 'settle: script + preload + freeze, once per worker thread (CPU)',
      value: r2(settle.startMs),
      unit: 'ms',
    },
    {
      group: 'sandbox',
      figure: 'settle without preload: module evaluation per trajectory (CPU)',
      value: r2(unshared.importMs),
      unit: 'ms',
      detail: { trajectories: TRAJECTORIES, costliestModules: unshared.top },
    },
    {
      group: 'sandbox',
      figure: 'settle without preload: validation + keys of a 10-call trajectory (CPU)',
      value: r2(unshared.workMs),
      unit: 'ms',
    },
    {
      group: 'sandbox',
      figure: 'plain: module evaluation per trajectory (CPU)',
      value: r2(plain.importMs),
      unit: 'ms',
      detail: { trajectories: TRAJECTORIES, costliestModules: plain.top },
    },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  benchSandboxStartup()
    .then((figures) => {
      for (const f of figures) {
        console.log(`${f.figure.padEnd(72)} ${String(f.value).padStart(8)} ${f.unit}`);
        const top = (f.detail?.costliestModules ?? []) as { module: string; ms: number }[];
        for (const m of top) console.log(`    ${String(m.ms).padStart(6)} ms  ${m.module}`);
      }
    })
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
