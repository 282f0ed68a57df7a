/**
 * The packed package, used from the outside: `npm pack` (its prepack builds dist/), installed
 * offline into a project outside this repository, then driven only through what a consumer has —
 * the `settle` bin, the `exports` map, the compiled JavaScript and its .d.ts. No tsx, no sources.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deriveKey } from '../../core/key';
import { uniqueId } from '../support/env';
import { consumerEnv, inConsumer as runIn, installConsumer, packSettle, REPO } from '../support/packed-settle';

const TSC = path.join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
const ENTRIES = ['worker', 'workflow', 'client', 'testing'] as const;

let tmp: string;
let consumer: string;
let packedFiles: string[];

async function inConsumer(file: string, args: string[], env: NodeJS.ProcessEnv = consumerEnv()) {
  return runIn(consumer, file, args, env);
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-pack-'));
  const packed = await packSettle(tmp);
  packedFiles = packed.files;
  consumer = path.join(tmp, 'consumer');
  await installConsumer(consumer, packed);
}, 600_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('holds compiled code, declarations and the bin: no TypeScript sources, nothing of the repository else', () => {
    for (const file of packedFiles) {
      expect(file.startsWith('dist/') || ['bin/settle.js', 'package.json', 'README.md'].includes(file), file).toBe(true);
      expect(file.endsWith('.ts') && !file.endsWith('.d.ts'), file).toBe(false);
    }
    for (const entry of ENTRIES) expect(packedFiles).toEqual(expect.arrayContaining([`dist/api/${entry}.js`, `dist/api/${entry}.d.ts`]));
    expect(packedFiles).toContain('dist/cli/main.js');
    expect(packedFiles).toContain('dist/workflows/index.js');
  });

  it('installs without tsx and with one copy of the Temporal SDK: the peers are the consumer’s', () => {
    const installed = JSON.parse(fs.readFileSync(path.join(consumer, 'node_modules/settle/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
    };
    expect(Object.keys(installed.dependencies)).not.toContain('tsx');
    expect(Object.keys(installed.dependencies).filter((d) => d.startsWith('@temporalio/'))).toEqual([]);
    expect(installed.peerDependencies['@temporalio/workflow']).toBe('^1.24.0');
    expect(fs.existsSync(path.join(consumer, 'node_modules/tsx'))).toBe(false);
    expect(fs.existsSync(path.join(consumer, 'node_modules/settle/node_modules/@temporalio'))).toBe(false);
  });

  it('runs the settle bin from compiled code: --help, and `settle key` derives the same key as the sources', async () => {
    const help = await inConsumer('npx', ['--offline', 'settle', '--help']);
    expect(help.stdout).toMatch(/^Usage: settle /);
    const components = {
      trajectoryId: 't-pack',
      turn: 3,
      callId: 'call_1',
      tool: 'file_edit',
      args: { path: '/ws/a', old_str: 'x', new_str: 'y' },
    };
    const key = await inConsumer('npx', [
      '--offline',
      'settle',
      'key',
      '--trajectory',
      components.trajectoryId,
      '--turn',
      String(components.turn),
      '--call-id',
      components.callId,
      '--tool',
      components.tool,
      '--args',
      JSON.stringify(components.args),
    ]);
    expect(key.stdout).toBe(`${deriveKey(components)}\n`);
  }, 60_000);

  it('type-checks a consumer under moduleResolution nodenext: every entry point’s declarations resolve', async () => {
    fs.writeFileSync(
      path.join(consumer, 'check.ts'),
      [
        "import { SettleClient, type StartOptions } from 'settle/client';",
        "import { createSettleWorker, type SettleWorkerOptions } from 'settle/worker';",
        "import { trajectoryWorkflow, callsQuery, type TrajectoryInput, type TrajectoryResult } from 'settle/workflow';",
        "import { startStack, type StartStackOptions } from 'settle/testing';",
        '',
        'export const start: (options: SettleWorkerOptions) => Promise<{ run(): Promise<void> }> = createSettleWorker;',
        'export const workflow: (input: TrajectoryInput) => Promise<TrajectoryResult> = trajectoryWorkflow;',
        'export const connect: typeof SettleClient.connect = SettleClient.connect;',
        'export const queryName: string = callsQuery.name;',
        'export const options: StartOptions = {};',
        'export const stack = (o: StartStackOptions) => startStack(o);',
        // Each line below is an error only if the types resolved (an unresolved import is `any`).
        '// @ts-expect-error databaseUrl is a string',
        'export const badWorker: SettleWorkerOptions = { databaseUrl: 5 };',
        '// @ts-expect-error outcome is one of three words',
        "export const badResult: TrajectoryResult['outcome'] = 'maybe';",
        '// @ts-expect-error start takes a trajectory id first',
        'export const badStart = (c: SettleClient) => c.start(1, {});',
        '// @ts-expect-error persistent is a boolean',
        "export const badStack: StartStackOptions = { persistent: 'yes' };",
        '',
      ].join('\n'),
    );
    // @temporalio/common's own declarations import `ms`, whose package has no types for `require`.
    fs.writeFileSync(path.join(consumer, 'shims.d.ts'), "declare module 'ms' {\n  export type StringValue = string;\n}\n");
    fs.writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          // settle's declarations are checked too: an import in them that does not resolve is an error.
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [path.join(REPO, 'node_modules', '@types')],
        },
        files: ['check.ts', 'shims.d.ts'],
      }),
    );
    const result = await inConsumer(process.execPath, [TSC, '-p', '.']).catch((err: { stdout: string; code: number }) => err);
    expect(result.stdout).toBe('');
  }, 240_000);

  it('imports every entry point in Node, and Temporal’s bundler takes settle/workflow without Node built-ins', async () => {
    fs.writeFileSync(
      path.join(consumer, 'workflows.js'),
      "export { trajectoryWorkflow } from 'settle/workflow';\nexport async function own() { return 'own'; }\n",
    );
    fs.writeFileSync(
      path.join(consumer, 'imports.mjs'),
      [
        "import { bundleWorkflowCode } from '@temporalio/worker';",
        'const exported = {};',
        `for (const entry of ${JSON.stringify(ENTRIES)}) exported[entry] = Object.keys(await import('settle/' + entry)).sort();`,
        "const bundle = await bundleWorkflowCode({ workflowsPath: new URL('./workflows.js', import.meta.url).pathname, logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } });",
        'console.log(JSON.stringify({ exported, bundled: bundle.code.length }));',
      ].join('\n'),
    );
    const { stdout } = await inConsumer(process.execPath, ['imports.mjs']);
    const { exported, bundled } = JSON.parse(stdout) as { exported: Record<string, string[]>; bundled: number };
    expect(exported.worker).toEqual(expect.arrayContaining(['createSettleWorker', 'WORKFLOWS_PATH']));
    expect(exported.client).toContain('SettleClient');
    expect(exported.workflow).toEqual(expect.arrayContaining(['trajectoryWorkflow', 'callsQuery', 'runTurnUpdate']));
    expect(exported.testing).toContain('startStack');
    expect(bundled).toBeGreaterThan(0);
  }, 240_000);

  it('runs a trajectory on a worker made from the installed package: its compiled workflows, bundled with the preloads', async () => {
    const workspaceRoot = path.join(tmp, 'workspaces');
    const workspace = path.join(workspaceRoot, 'ws');
    fs.mkdirSync(workspace, { recursive: true });
    fs.writeFileSync(path.join(workspace, 'hello.txt'), 'hello from the consumer\n');
    fs.writeFileSync(
      path.join(consumer, 'trajectory.mjs'),
      [
        "import { createSettleWorker, WORKFLOWS_PATH } from 'settle/worker';",
        "import { SettleClient } from 'settle/client';",
        'const [address, databaseUrl, taskQueue, workspace] = process.argv.slice(2);',
        'const worker = await createSettleWorker({ temporal: { address, taskQueue }, databaseUrl, warn: () => {} });',
        'const running = worker.run();',
        'const client = await SettleClient.connect({ address, taskQueue });',
        'const turns = [{ turn: 0, calls: [{ call_id: "c1", tool: "file_view", args: { path: `${workspace}/hello.txt`, offset: 1, limit: 10 } }] }];',
        'const handle = await client.start(`pack-${taskQueue}`, { workspace, turns });',
        'const result = await handle.result();',
        'await client.close();',
        'worker.shutdown();',
        'await running;',
        'console.log(JSON.stringify({ workflowsPath: WORKFLOWS_PATH, result }));',
      ].join('\n'),
    );
    const env = consumerEnv({ SETTLE_WORKSPACE_ROOT: workspaceRoot });
    const { stdout } = await inConsumer(
      process.execPath,
      ['trajectory.mjs', inject('temporalAddress'), inject('databaseUrl'), uniqueId('tq-pack'), workspace],
      env,
    );
    const { workflowsPath, result } = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      workflowsPath: string;
      result: { outcome: string; calls: { resolution: string; observation: unknown }[] };
    };
    expect(workflowsPath).toBe(path.join(fs.realpathSync(consumer), 'node_modules/settle/dist/workflows/index.js'));
    expect(result.outcome).toBe('completed');
    expect(result.calls.map((c) => c.resolution)).toEqual(['read']);
    expect(JSON.stringify(result.calls[0]!.observation)).toContain('hello from the consumer');

    // The package carries its workflows pre-built: with the bundler's entry gone, a worker still
    // starts (it never bundles) and runs the trajectory.
    expect(packedFiles).toEqual(expect.arrayContaining(['dist/workflow-bundle.js', 'dist/workflow-bundle.js.sdk-version']));
    const entry = path.join(consumer, 'node_modules/settle/dist/workflows/index.js');
    fs.renameSync(entry, `${entry}.away`);
    try {
      const again = await inConsumer(
        process.execPath,
        ['trajectory.mjs', inject('temporalAddress'), inject('databaseUrl'), uniqueId('tq-pack'), workspace],
        env,
      );
      const prebuilt = JSON.parse(again.stdout.trim().split('\n').at(-1)!) as { result: { outcome: string } };
      expect(prebuilt.result.outcome).toBe('completed');
    } finally {
      fs.renameSync(`${entry}.away`, entry);
    }
  }, 240_000);
});
