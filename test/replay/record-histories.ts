/**
 * `npm run record:histories` — records the histories the replay test runs through the current
 * workflow code (test/replay/replay.test.ts). Run it when a release intentionally adds a
 * scenario; never to "fix" a failing replay: a replay failure means running trajectories would
 * break, and the change must go through `patched()` instead.
 *
 * Scenarios: the demo (scripted), an orchestrator-driven trajectory with an approved and a
 * denied A3 call, a model-driven trajectory, a cancelled one with compensation, and one that
 * continued as new.
 */
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { startStack } from '../../stack/index';
import { findTemporalCli } from '../../stack/temporal';
import { createSettleWorker } from '../../workers/create-worker';
import { makeWorkerPolicy, modelEndpoint } from '../../activities/worker-policy';
import { installRuntime } from '../../workers/runtime';
import { generateOperatorKey, loadOperatorKeys, loadOperatorSigner } from '../../activities/operator/operator-keys';
import { mintCredential } from '../../activities/operator/operator-credentials';
import { SettleClient } from '../../client/index';
import { demoTurns, prepareWorkspace } from '../../cli/demo';
import { startChatServer } from '../support/chat-server';

const FIXTURES = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures');
/** The fixture set to record, e.g. `npm run record:histories -- v2`. */
const SET = process.argv[2] ?? '';
if (!/^v\d+$/.test(SET)) {
  console.error('usage: npm run record:histories -- vN   (the name of the new fixture set, e.g. v2)');
  process.exit(2);
}

async function main(): Promise<void> {
  installRuntime('WARN');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-record-'));
  fs.chmodSync(dataDir, 0o755);
  const stack = await startStack({ postgres: { dataDir: path.join(dataDir, 'pg'), ephemeral: true } });
  fs.mkdirSync(path.join(dataDir, 'ws'));
  const policy = makeWorkerPolicy({
    workspaceRoot: path.join(dataDir, 'ws'),
    modelEndpoints: [],
    modelKeyEnvs: [],
    allowNoCapability: false,
  });
  // The recorder's operator key: it signs the approvals below; the worker holds its public half.
  const recorder = generateOperatorKey('recorder');
  const signer = loadOperatorSigner(recorder.privateText);
  const worker = await createSettleWorker({
    temporal: { address: stack.temporal.address, taskQueue: 'record' },
    databaseUrl: stack.databaseUrl,
    // Workspaces in dataDir/ws; the scripted model server's port is allowed once it is known.
    policy,
    operatorKeys: loadOperatorKeys(recorder.publicText),
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: stack.temporal.address });
  const settle = new SettleClient(new Client({ connection }), 'record');
  const ws = (name: string) => {
    const dir = path.join(dataDir, 'ws', name);
    prepareWorkspace(dir);
    return dir;
  };
  const cli = findTemporalCli();
  if (cli.kind !== 'binary') throw new Error('recording needs the Temporal CLI binary (set TEMPORAL_CLI)');
  // Exported by the Temporal CLI (`temporal workflow show --output json`), the standard format
  // for replay fixtures. The workflow id goes into manifest.json: keys are derived from it, so a
  // history replayed under another id takes other paths (an approval for "another" key).
  // Each release records a new set next to the old ones: the old sets prove that patched changes
  // still replay what ran before them, the newest covers the current code paths.
  const manifestPath = path.join(FIXTURES, 'manifest.json');
  const manifest: Record<string, string> = fs.existsSync(manifestPath) ? JSON.parse(fs.readFileSync(manifestPath, 'utf8')) : {};
  const save = async (scenario: string, id: string, runId?: string) => {
    const name = `${SET}-${scenario}`;
    manifest[`${name}.json`] = id;
    fs.writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n');
    const json = execFileSync(
      cli.path,
      [
        'workflow',
        'show',
        '--address',
        stack.temporal.address,
        '--workflow-id',
        id,
        ...(runId ? ['--run-id', runId] : []),
        '--output',
        'json',
      ],
      { encoding: 'utf8' },
    );
    fs.writeFileSync(path.join(FIXTURES, `${name}.json`), json.endsWith('\n') ? json : `${json}\n`);
    console.log(`recorded ${name} (${JSON.parse(json).events.length} events)`);
  };

  try {
    fs.mkdirSync(FIXTURES, { recursive: true });

    const demoWs = ws('demo');
    await settle.start('replay-demo', { workspace: demoWs, turns: demoTurns(demoWs) });
    await settle.result('replay-demo');
    await save('demo', 'replay-demo');

    const orchWs = ws('orch');
    await settle.start('replay-orchestrator', { workspace: orchWs, levelOverrides: { bash_execute: 'A3' }, approvalTimeoutMs: 60_000 });
    await settle.runTurn('replay-orchestrator', 0, [
      { call_id: 'v', tool: 'file_view', args: { path: path.join(orchWs, 'app.ts'), offset: 1, limit: 3 } },
    ]);
    for (const [turn, decision] of [
      [1, 'approve'],
      [2, 'deny'],
    ] as const) {
      const pending = settle.runTurn('replay-orchestrator', turn, [
        { call_id: `b${turn}`, tool: 'bash_execute', args: { command: `echo ${turn}` } },
      ]);
      let key: string | undefined;
      while (!key) {
        key = (await settle.status('replay-orchestrator')).calls.find((c) => c.resolution === 'awaiting_approval')?.key ?? undefined;
        await new Promise((r) => setTimeout(r, 100));
      }
      const trajectoryId = 'replay-orchestrator';
      await settle.approve(
        trajectoryId,
        mintCredential(signer, await settle.approvalClaim({ trajectoryId, key, decision, reason: 'fixture' })),
      );
      await pending;
    }
    await settle.finish('replay-orchestrator', 'completed', 'fixture done');
    await settle.result('replay-orchestrator');
    await save('orchestrator-a3', 'replay-orchestrator');

    const modelWs = ws('model');
    const server = await startChatServer([
      {
        tool_calls: [{ id: 'm1', name: 'file_edit', arguments: JSON.stringify({ path: path.join(modelWs, 'app.ts'), old_str: 'greet(' }) }],
      },
      {
        tool_calls: [
          {
            id: 'm2',
            name: 'file_edit',
            arguments: JSON.stringify({ path: path.join(modelWs, 'app.ts'), old_str: 'greet(', new_str: 'hello(' }),
          },
        ],
      },
      { content: 'done' },
    ]);
    (policy.modelEndpoints as string[]).push(modelEndpoint(server.baseUrl));
    await settle.start('replay-model', { workspace: modelWs, model: { baseUrl: server.baseUrl, model: 'scripted', task: 'rename greet' } });
    await settle.result('replay-model');
    await server.close();
    await save('model-driven', 'replay-model');

    const cancelWs = ws('cancel');
    await settle.start('replay-cancel', { workspace: cancelWs });
    await settle.runTurn('replay-cancel', 0, [
      { call_id: 'e', tool: 'file_edit', args: { path: path.join(cancelWs, 'app.ts'), old_str: 'greet(', new_str: 'hi(' } },
    ]);
    await settle.handle('replay-cancel').cancel();
    await settle.result('replay-cancel').catch(() => undefined);
    await save('cancelled-compensated', 'replay-cancel');

    const canWs = ws('can');
    const turns = Array.from({ length: 6 }, (_, i) => ({
      turn: i,
      calls: [{ call_id: `c${i}`, tool: 'bash_execute', args: { command: `echo ${i}` } }],
    }));
    const handle = await settle.start('replay-can', { workspace: canWs, turns, maxHistoryEvents: 30 });
    await settle.result('replay-can');
    await save('continue-as-new-first-run', 'replay-can', handle.firstExecutionRunId);
    await save('continue-as-new-last-run', 'replay-can');
  } finally {
    await connection.close();
    worker.shutdown();
    await running;
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
