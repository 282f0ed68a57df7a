/**
 * What the worker's operator decides, a spec cannot widen (issue 12, items 2 and 3): which model
 * endpoints are called and which variables are sent as keys (never settle's own secrets), where
 * workspaces may lie, that a keyed worker checks every trajectory, and that the network comes only
 * from the `connect` right. Real worker, real Temporal, real Postgres, real bubblewrap.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SettleClient } from '../../client/index';
import { callChatCompletions } from '../../activities/model/openai-chat';
import { makeWorkerPolicy } from '../../activities/worker-policy';
import { sign } from '../../activities/capability/signer';
import type { CallReport, TrajectoryInput, TrajectoryResult } from '../../workflows/definitions';
import { startChatServer, type ChatServer } from '../support/chat-server';
import { startTestWorker, tempWorkspace, testKeyRing, testWorkspaceRoot, uniqueId, type RunningWorker } from '../support/env';

let keyless: RunningWorker;
let keyed: RunningWorker;
let devMode: RunningWorker;
const ring = testKeyRing();
let server: ChatServer;

beforeAll(async () => {
  process.env.SETTLE_CAP_KEYS = `k1:${ring.keys.get('k1')!.toString('base64')}`;
  process.env.TEST_MODEL_KEY = 'sk-allowed';
  process.env.NOT_A_MODEL_KEY = 'some-other-secret';
  [keyless, keyed, devMode] = await Promise.all([
    startTestWorker(),
    startTestWorker({ keyRing: ring }),
    startTestWorker({ keyRing: ring, policy: { allowNoCapability: true } }),
  ]);
  server = await startChatServer(Array.from({ length: 20 }, () => ({ content: 'done' })));
});
afterAll(async () => {
  await Promise.all([keyless?.stop(), keyed?.stop(), devMode?.stop()]);
  await server?.close();
  delete process.env.SETTLE_CAP_KEYS;
  delete process.env.TEST_MODEL_KEY;
  delete process.env.NOT_A_MODEL_KEY;
});

/** Starts through the raw Temporal client: what an attacker with access to the task queue could send, no client-side checks. */
async function runRaw(worker: RunningWorker, input: TrajectoryInput, id = uniqueId('policy')) {
  const handle = await worker.client.workflow.start('trajectoryWorkflow', {
    taskQueue: worker.taskQueue,
    workflowId: id,
    args: [input],
  });
  return handle.result().then(
    (result: TrajectoryResult) => ({ ok: true as const, result }),
    (err: Error) => ({ ok: false as const, message: causes(err) }),
  );
}

/** A failure's message with every cause's (workflow failed ← activity failed ← the refusal). */
function causes(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as Error | undefined; e; e = e.cause as Error | undefined) parts.push(e.message);
  return parts.join(' ← ');
}

describe('model endpoints and keys are the operator’s choice (item 2)', () => {
  const model = (over: Record<string, unknown>) => ({ model: 'm', task: 'say done', baseUrl: server.baseUrl, ...over });

  it('an endpoint the operator did not allow is never called, with or without a key', async () => {
    const before = server.requests.length;
    const ws = tempWorkspace('policy');
    const run = await runRaw(keyless, { workspace: ws, model: model({ apiKeyEnv: 'TEST_MODEL_KEY' }) });
    expect(run.ok).toBe(false);
    expect(!run.ok && run.message).toMatch(/model\.baseUrl: .* is not among the model endpoints .*SETTLE_MODEL_ENDPOINTS: none/);
    expect(server.requests.length).toBe(before);
  });

  it('a variable the operator did not list is never sent as a key, even to an allowed endpoint', async () => {
    keyless.allowModelEndpoint(server.baseUrl);
    const before = server.requests.length;
    const run = await runRaw(keyless, { workspace: tempWorkspace('policy'), model: model({ apiKeyEnv: 'NOT_A_MODEL_KEY' }) });
    expect(!run.ok && run.message).toMatch(
      /model\.apiKeyEnv: NOT_A_MODEL_KEY is not among the variables .*SETTLE_MODEL_KEY_ENVS: TEST_MODEL_KEY/,
    );
    expect(server.requests.length).toBe(before);
    // The listed one is sent, to the allowed endpoint.
    const allowed = await runRaw(keyless, { workspace: tempWorkspace('policy'), model: model({ apiKeyEnv: 'TEST_MODEL_KEY' }) });
    expect(allowed).toMatchObject({ ok: true, result: { finalAnswer: 'done' } });
    expect(server.requests.at(-1)!.headers.authorization).toBe('Bearer sk-allowed');
  });

  it("settle's own secrets are refused by the input contract, by the worker's configuration and by the adapter", async () => {
    keyless.allowModelEndpoint(server.baseUrl);
    const before = server.requests.length;
    for (const name of ['SETTLE_CAP_KEYS', 'SETTLE_KEY_SECRET', 'DATABASE_URL', 'TEMPORAL_API_KEY', 'PGPASSWORD']) {
      const run = await runRaw(keyless, { workspace: tempWorkspace('policy'), model: model({ apiKeyEnv: name }) });
      expect(!run.ok && run.message).toMatch(/model\.apiKeyEnv must not name settle's own secrets/);
      expect(() => makeWorkerPolicy({ ...keyless.policy, modelKeyEnvs: [name] })).toThrow(
        /SETTLE_MODEL_KEY_ENVS\[0\] must not name settle's own secrets/,
      );
      // Even a policy object built by hand around the checks does not make the adapter send one.
      await expect(
        callChatCompletions(
          { config: { baseUrl: server.baseUrl, model: 'm', apiKeyEnv: name }, messages: [], tools: [] },
          { modelEndpoints: keyless.policy.modelEndpoints, modelKeyEnvs: [name] },
        ),
      ).rejects.toThrow(/is one of settle's own secrets and is never sent anywhere/);
    }
    expect(server.requests.length).toBe(before);
    expect(JSON.stringify(server.requests)).not.toContain(process.env.SETTLE_CAP_KEYS!.slice(3));
  });
});

describe('workspaces, capabilities and the network are the operator’s choice (item 3)', () => {
  const view = (p: string) => [{ turn: 0, calls: [{ call_id: 'v', tool: 'file_view', args: { path: p, offset: 1, limit: 10 } }] }];

  it.each([
    ['/etc', () => '/etc'],
    ['/usr', () => '/usr'],
    ['the workspace root itself', () => testWorkspaceRoot()],
    [
      'a symlink inside the root pointing out',
      () => {
        const link = path.join(tempWorkspace('policy'), 'to-etc');
        fs.symlinkSync('/etc', link);
        return link;
      },
    ],
  ])('a workspace outside the root (%s) is refused before any access', async (_name, workspace) => {
    const ws = workspace();
    const run = await runRaw(keyless, { workspace: ws, turns: view(path.join(ws, 'passwd')) });
    expect(run.ok).toBe(true);
    const [call] = run.ok ? run.result.calls : [];
    expect(call).toMatchObject({ resolution: 'denied', state: 'NO_RECORD' });
    expect(call!.observation!.error).toMatch(/^denied by the worker's policy: workspace .* must lie inside the worker's workspace root/);
    expect(call!.observation!.output).toBe('');
  });

  it('a worker holding capability keys refuses a trajectory without a capability; development mode is explicit', async () => {
    const ws = tempWorkspace('policy');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'hello\n');
    const input = {
      workspace: ws,
      turns: [
        {
          turn: 0,
          calls: [
            { call_id: 'v', tool: 'file_view', args: { path: path.join(ws, 'a.txt'), offset: 1, limit: 10 } },
            { call_id: 'e', tool: 'file_edit', args: { path: path.join(ws, 'a.txt'), old_str: 'hello', new_str: 'bye' } },
            { call_id: 'b', tool: 'bash_execute', args: { command: 'echo ran > ran.txt' } },
          ],
        },
      ],
    };
    const refused = await runRaw(keyed, input);
    expect(refused.ok && refused.result.calls.map((c: CallReport) => [c.callId, c.resolution])).toEqual([
      ['v', 'denied'],
      ['e', 'denied'],
      ['b', 'denied'],
    ]);
    expect(refused.ok && refused.result.calls[0]!.observation!.error).toMatch(/every trajectory needs a capability/);
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('hello\n');
    expect(fs.existsSync(path.join(ws, 'ran.txt'))).toBe(false);

    const allowed = await runRaw(devMode, input);
    expect(allowed.ok && allowed.result.calls.map((c: CallReport) => c.resolution)).toEqual(['read', 'executed', 'executed']);
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('bye\n');
  });

  it('the default policy is the safe one: a dedicated root, no model endpoints or keys, no development mode, no lane overrides', async () => {
    const { loadWorkerPolicy, DEFAULT_WORKSPACE_ROOT } = await import('../../activities/worker-policy');
    const policy = loadWorkerPolicy({});
    expect(policy).toEqual({
      workspaceRoot: DEFAULT_WORKSPACE_ROOT,
      modelEndpoints: [],
      modelKeyEnvs: [],
      allowNoCapability: false,
      lanes: {},
    });
    expect(fs.statSync(DEFAULT_WORKSPACE_ROOT).isDirectory()).toBe(true);
    expect(() => loadWorkerPolicy({ SETTLE_WORKSPACE_ROOT: '/' })).toThrow(/SETTLE_WORKSPACE_ROOT must not be \//);
    expect(() => loadWorkerPolicy({ SETTLE_ALLOW_NO_CAPABILITY: 'yes' })).toThrow(/SETTLE_ALLOW_NO_CAPABILITY must be 1 or 0/);
    const warnings: string[] = [];
    const { createSettleWorker } = await import('../../workers/create-worker');
    const { inject } = await import('vitest');
    const w = await createSettleWorker({
      temporal: { address: inject('temporalAddress'), taskQueue: uniqueId('tq') },
      databaseUrl: inject('databaseUrl'),
      workflowBundle: { codePath: inject('workflowBundlePath') },
      keyRing: ring,
      policy: { ...policy, allowNoCapability: true },
      warn: (l) => warnings.push(l),
    });
    const running = w.run();
    w.shutdown();
    await running;
    expect(warnings).toEqual([expect.stringMatching(/WARNING: SETTLE_ALLOW_NO_CAPABILITY=1 .* run UNCHECKED/)]);
  });

  describe('network', () => {
    let host: net.Server;
    let port: number;
    beforeAll(async () => {
      host = net.createServer((s) => s.end('hello from the host\n'));
      await new Promise<void>((r) => host.listen(0, '0.0.0.0', r));
      port = (host.address() as net.AddressInfo).port;
    });
    afterAll(() => new Promise<void>((r) => host.close(() => r())));
    const probe = () => [
      {
        turn: 0,
        calls: [
          {
            call_id: 'n',
            tool: 'bash_execute',
            args: { command: `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 || echo no-connection` },
          },
        ],
      },
    ];

    it('`network: true` in a spec grants nothing by itself', async () => {
      const run = await runRaw(keyless, { workspace: tempWorkspace('policy'), network: true, turns: probe() });
      expect(run.ok && run.result.calls[0]!.observation!.output).toBe('no-connection\n');
    });

    it('nor does it on a keyed worker whose capability lacks `connect`', async () => {
      const ws = tempWorkspace('policy');
      const id = uniqueId('policy');
      const capability = sign(
        {
          v: 1,
          aud: id,
          rights: ['read', 'write', 'exec'],
          objects: [`path:${ws}`],
          pred: { max_cost: 1, budget: 10 },
          exp: Date.now() + 3_600_000,
          parent: null,
          depth: 0,
        },
        ring,
      );
      const run = await runRaw(keyed, { workspace: ws, network: true, capability, turns: probe() }, id);
      expect(run.ok && run.result.calls[0]!.observation!.output).toBe('no-connection\n');
    });

    // Item 4: `connect` reaches exactly the capability's host objects, through the egress proxy.
    it("with `connect`, exactly the capability's host objects through the proxy: never the worker's database, nothing around the proxy", async () => {
      const web = http.createServer((req, res) => res.end(`web ${req.url}\n`));
      await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
      const webPort = (web.address() as net.AddressInfo).port;
      const pgPort = Number(new URL(inject('databaseUrl')).port || 5432);
      // As the worker's operator, for this test only: both loopback ports may be reached (a
      // mistake for the database, which the worker refuses anyway: it is its own service).
      process.env.SETTLE_EGRESS_ALLOW_INTERNAL = `127.0.0.1:${webPort},127.0.0.1:${pgPort}`;
      try {
        const ws = tempWorkspace('policy');
        const id = uniqueId('policy');
        const capability = sign(
          {
            v: 1,
            aud: id,
            rights: ['read', 'write', 'exec', 'connect'],
            objects: [`path:${ws}`, `host:localhost:${webPort}`, `host:localhost:${pgPort}`],
            pred: { max_cost: 1, budget: 10 },
            exp: Date.now() + 3_600_000,
            parent: null,
            depth: 0,
          },
          ring,
        );
        const command = [
          `curl -sS -m 20 -p http://localhost:${webPort}/granted`,
          `curl -sS -m 20 -p http://localhost:${pgPort}/ || echo pg-refused`,
          `curl -sS -m 20 http://other.example:${webPort}/ | grep -o 'not within'`,
          `curl -sS -m 10 --noproxy '*' http://127.0.0.1:${webPort}/ || echo direct-failed`,
          `(exec 3<>/dev/tcp/127.0.0.1/${pgPort}) 2>/dev/null || echo pg-direct-failed`,
        ].join('; ');
        const turns = [{ turn: 0, calls: [{ call_id: 'e', tool: 'bash_execute', args: { command } }] }];
        const run = await runRaw(keyed, { workspace: ws, capability, turns }, id);
        expect(run.ok).toBe(true);
        const obs = run.ok ? run.result.calls[0]!.observation! : null;
        expect(obs?.output).toBe('web /granted\npg-refused\nnot within\ndirect-failed\npg-direct-failed\n');
        expect(obs?.error).toMatch(new RegExp(`port ${pgPort} is the worker's own service`));
        expect(obs?.error).toMatch(
          /network only through the egress proxy, to host:localhost:\d+, host:localhost:\d+: 1 connection\(s\) allowed, 2 refused/,
        );
      } finally {
        delete process.env.SETTLE_EGRESS_ALLOW_INTERNAL;
        await new Promise<void>((r) => web.close(() => r()));
      }
    });
  });
});

// The orchestrator's client refuses a reserved key variable before anything starts.
it('SettleClient.start refuses a spec naming one of settle’s secrets as the model key', async () => {
  const settle = new SettleClient(keyless.client, keyless.taskQueue);
  await expect(
    settle.start(uniqueId('policy'), {
      workspace: tempWorkspace('policy'),
      model: { baseUrl: server.baseUrl, model: 'm', task: 't', apiKeyEnv: 'SETTLE_CAP_KEYS' },
    }),
  ).rejects.toThrow(/input\.model\.apiKeyEnv must not name settle's own secrets/);
});
