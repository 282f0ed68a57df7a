/**
 * `settle demo` / `npm start`: a real Temporal server, a real PostgreSQL, a real worker, and one
 * agent trajectory of several file edits — one of them a repeat that is served from its
 * endpoint record without executing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SettleClient } from '../client/index';
import { EndpointStore } from '../activities/store/endpoint-store';
import { openDatabase } from '../activities/store/database';
import { startStack, type Stack } from '../stack/index';
import { SETTLE_DIR } from '../stack/paths';
import { installRuntime } from '../workers/runtime';
import { createSettleWorker } from '../workers/create-worker';
import type { ScriptedTurn, TrajectoryResult } from '../workflows/trajectory';
import { workflowUrl } from './ui';
import { handOverWorkspace } from '../activities/tools/sandbox-identity';
import { devOperatorKey, devOperatorKeys } from './operator-key';

export interface DemoOptions {
  keep: boolean;
  log: (line: string) => void;
}

/** The demo's calls; `outside` is a file outside the workspace that one call tries to edit (and is refused). */
export function demoTurns(workspace: string, outside = '/etc/hostname'): ScriptedTurn[] {
  const app = path.join(workspace, 'app.ts');
  const rename = {
    call_id: 'call_rename',
    tool: 'file_edit',
    args: { path: app, old_str: 'function greet(', new_str: 'function greetUser(' },
  };
  return [
    { turn: 0, calls: [rename] },
    {
      turn: 1,
      calls: [
        { call_id: 'call_body', tool: 'file_edit', args: { path: app, old_str: "return 'hello';", new_str: 'return `hello, ${name}`;' } },
      ],
    },
    // The orchestrator lost the answer to turn 0 and sent the same call again: same key, replayed.
    { turn: 0, calls: [rename] },
    {
      turn: 2,
      calls: [
        // A tool-level error is a completed call whose result is the error.
        { call_id: 'call_missing', tool: 'file_edit', args: { path: app, old_str: 'no such text', new_str: 'x' } },
        // Outside the workspace: refused with nothing touched.
        { call_id: 'call_escape', tool: 'file_edit', args: { path: outside, old_str: 'a', new_str: 'b' } },
      ],
    },
  ];
}

export function prepareWorkspace(root: string): void {
  fs.mkdirSync(root, { recursive: true });
  handOverWorkspace(root); // as root, sandboxed commands run as the workspace's unprivileged owner
  fs.writeFileSync(path.join(root, 'app.ts'), "export function greet(name: string): string {\n  return 'hello';\n}\n");
}

export async function runDemo(options: DemoOptions): Promise<number> {
  const { log } = options;
  installRuntime('WARN');
  const stack: Stack = await startStack({ log, persistent: options.keep });
  let workerRun: Promise<void> | undefined;
  let shutdownWorker = () => {};
  try {
    const trajectoryId = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    const workspace = path.join(SETTLE_DIR, 'workspaces', trajectoryId);
    prepareWorkspace(workspace);

    log('worker: bundling workflow code and starting…');
    // As `settle dev`: the development operator key's public half, so verdicts and approvals can be given.
    const operatorKey = devOperatorKey();
    const worker = await createSettleWorker({
      temporal: { address: stack.temporal.address, namespace: stack.temporal.namespace },
      databaseUrl: stack.databaseUrl,
      operatorKeys: devOperatorKeys(operatorKey.signer),
    });
    shutdownWorker = () => worker.shutdown();
    workerRun = worker.run();

    const settle = await SettleClient.connect({ address: stack.temporal.address, namespace: stack.temporal.namespace });
    await settle.start(trajectoryId, { workspace, turns: demoTurns(workspace) });
    const result = await settle.result(trajectoryId);
    await settle.close();

    const db = openDatabase(stack.databaseUrl, { max: 1 });
    const records = await new EndpointStore(db).list({ trajectoryId });
    await db.destroy();

    const finalFile = fs.readFileSync(path.join(workspace, 'app.ts'), 'utf8');
    printSummary(result, records.length, finalFile);
    if (stack.temporal.uiUrl) console.log(`\nWeb UI: ${workflowUrl(stack.temporal.uiUrl, stack.temporal.namespace, trajectoryId)}`);
    const problems = demoProblems(result, records.length, finalFile);
    for (const p of problems) console.error(`demo: FAILED: ${p}`);

    if (options.keep) {
      console.log(
        `\nStack kept up (Ctrl-C to stop). Temporal ${stack.temporal.address}, DATABASE_URL=${stack.databaseUrl}, ` +
          `SETTLE_OPERATOR_KEY=@${operatorKey.file} (operator ${operatorKey.signer.operator})`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
    }
    return problems.length === 0 ? 0 : 1;
  } finally {
    shutdownWorker();
    await workerRun?.catch(() => {});
    await stack.stop();
  }
}

/** What the demo promises; anything else is a failed demo (non-zero exit), not a summary to squint at. */
export function demoProblems(result: TrajectoryResult, recordCount: number, finalFile: string): string[] {
  const problems: string[] = [];
  const resolutions = result.calls.map((c) => c.resolution);
  const expected = ['executed', 'executed', 'replayed', 'executed', 'executed'];
  if (resolutions.join() !== expected.join()) problems.push(`resolutions were ${resolutions.join(', ')}; expected ${expected.join(', ')}`);
  if (result.calls[0]?.key !== result.calls[2]?.key) problems.push('the repeated call got a different key than the original');
  if (recordCount !== 4) problems.push(`${recordCount} endpoint records; expected 4`);
  if (!finalFile.includes('function greetUser(') || !finalFile.includes('return `hello, ${name}`;')) {
    problems.push('app.ts does not show both edits');
  }
  if (finalFile.split('greetUser').length !== 2) problems.push('the rename was applied more than once');
  return problems;
}

function printSummary(result: TrajectoryResult, recordCount: number, finalFile: string): void {
  console.log(`\nTrajectory ${result.trajectoryId}`);
  console.log('turn  tool       key        state        how           observation');
  for (const c of result.calls) {
    const obs = c.observation ? (c.observation.error ? `error: ${c.observation.error}` : c.observation.output) : '';
    console.log(
      `${String(c.turn).padEnd(5)} ${c.tool.padEnd(10)} ${(c.key ? c.key.slice(0, 8) + '…' : '-').padEnd(10)} ${c.state.padEnd(12)} ${c.resolution.padEnd(13)} ${obs.length > 90 ? obs.slice(0, 89) + '…' : obs}`,
    );
  }
  const executed = result.calls.filter((c) => c.resolution === 'executed').length;
  const replayed = result.calls.filter((c) => c.resolution === 'replayed').length;
  console.log(
    `\n${result.calls.length} calls: ${executed} executed, ${replayed} replayed from their record; ${recordCount} endpoint records.`,
  );
  console.log(`\napp.ts now:\n${finalFile.replace(/^/gm, '  ')}`);
}
