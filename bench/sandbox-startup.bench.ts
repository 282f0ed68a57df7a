/**
 * `npm run bench:sandbox` — what a trajectory's workflow sandbox costs to start, in CPU time (so
 * a loaded machine changes it little): the settle bundle against the plain baseline's.
 *
 * With Temporal's reusable V8 context (the default) a worker evaluates the bundle's script once,
 * but every workflow gets a fresh module cache: each trajectory runs the top level of every module
 * its workflow imports again (zod's classes, every schema built at load). This evaluates each
 * bundle in one V8 context the same way — the SDK's entry modules shared, then for each simulated
 * trajectory a fresh cache and `importWorkflows()` — and reports the median CPU per trajectory and
 * the modules that cost most (their own top level, children excluded; minimum over trajectories).
 * For settle it also times the validation and key derivation a 10-call scripted trajectory does
 * (input contract, each call's envelope and `file_edit` arguments, its key), on the fresh modules.
 */
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOWS_PATH } from '../workers/create-worker';
import { PLAIN_WORKFLOWS_PATH } from './plain/worker';
import type { Figure } from './support/figures';

const TRAJECTORIES = 80;
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const CALL_SITE = '__webpack_modules__[moduleId].call(module.exports, module, module.exports, __webpack_require__);';
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

interface Sandbox {
  /** Module exports by webpack id, of the trajectory being evaluated. */
  modules: Map<string, { exports: Record<string, unknown> }>;
  run(code: string): unknown;
  /** Own top-level time per module id, of the last trajectory. */
  selfMs: Map<string, number>;
  nextTrajectory(): void;
}

function sandbox(bundle: string): Sandbox {
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
  let modules = new Map<string, { exports: Record<string, unknown> }>();
  const bench = { stack: [] as number[], self: new Map<string, number>() };
  const context = vm.createContext({
    TextEncoder,
    TextDecoder,
    URL,
    URLSearchParams,
    AbortController,
    performance,
    console,
    __bench: bench,
    __webpack_module_cache__: new Proxy(
      {},
      {
        get: (_, id) => modules.get(id as string),
        set: (_, id, value: { exports: Record<string, unknown> }) => (modules.set(id as string, value), true),
        deleteProperty: (_, id) => modules.delete(id as string),
        has: (_, id) => modules.has(id as string),
      },
    ),
  });
  vm.runInContext(timed, context, { filename: 'workflow-bundle.js' });
  const shared = new Map(modules);
  return {
    get modules() {
      return modules;
    },
    run: (code) => vm.runInContext(code, context),
    selfMs: bench.self,
    nextTrajectory() {
      modules = new Map(shared);
      bench.self.clear();
    },
  };
}

function measure(bundle: string, work?: (s: Sandbox) => void) {
  const s = sandbox(bundle);
  const importMs: number[] = [];
  const workMs: number[] = [];
  const minSelf = new Map<string, number>();
  for (let i = 0; i < TRAJECTORIES; i++) {
    s.nextTrajectory();
    let t = cpuMs();
    s.run('__TEMPORAL__.importWorkflows()');
    importMs.push(cpuMs() - t);
    if (work) {
      t = cpuMs();
      work(s);
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
  return { importMs: median(importMs), workMs: work ? median(workMs) : null, top };
}

/** The checks a 10-call scripted trajectory of file edits runs in workflow code. */
function scriptedTrajectory(s: Sandbox): void {
  const exportsOf = (id: string) => {
    const m = s.modules.get(id);
    if (!m) throw new Error(`module ${id} not loaded`);
    return m.exports as unknown;
  };
  const { parseArgs } = exportsOf('./core/validation.ts') as { parseArgs: (schema: unknown, value: unknown, root?: string) => unknown };
  const { TrajectoryInputSchema, ProposedCallSchema } = exportsOf('./core/trajectory-input.ts') as Record<string, unknown>;
  const { CATALOG } = exportsOf('./core/tools/catalog.ts') as { CATALOG: Record<string, { args: unknown }> };
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
  parseArgs(TrajectoryInputSchema, input, 'input');
  for (const turn of input.turns) {
    for (const call of turn.calls) {
      parseArgs(ProposedCallSchema, call, '');
      const args = parseArgs(CATALOG[call.tool]!.args, call.args);
      deriveKey({ trajectoryId: 'bench-sandbox', turn: turn.turn, callId: call.call_id, tool: call.tool, args });
    }
  }
}

export async function benchSandboxStartup(): Promise<Figure[]> {
  const settle = measure((await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet })).code, scriptedTrajectory);
  const plain = measure((await bundleWorkflowCode({ workflowsPath: PLAIN_WORKFLOWS_PATH, logger: quiet })).code);
  const r2 = (x: number) => Math.round(x * 100) / 100;
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
      value: r2(settle.workMs ?? NaN),
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
        console.log(`${f.figure.padEnd(56)} ${String(f.value).padStart(8)} ${f.unit}`);
        const top = (f.detail?.costliestModules ?? []) as { module: string; ms: number }[];
        for (const m of top) console.log(`    ${String(m.ms).padStart(6)} ms  ${m.module}`);
      }
    })
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
