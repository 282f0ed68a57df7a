/** bash_execute (A2) in bubblewrap, against real processes. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashExecute } from '../../activities/tools/bash-execute';
import { sandboxAvailability, MAX_OUTPUT_BYTES } from '../../activities/tools/sandbox';
import { runSettled, applyProbe } from '../../activities/settled/run-settled';
import { deriveKey } from '../../core/key';
import type { BashExecuteArgs } from '../../core/tools/bash-execute';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

async function run(command: string, opts: { timeout_ms?: number; network?: boolean; workspace?: string } = {}) {
  const workspace = opts.workspace ?? tempWorkspace('bash');
  const args: BashExecuteArgs = { command, timeout_ms: opts.timeout_ms ?? 30_000 };
  const env = { workspace, network: opts.network ?? false };
  const plan = await bashExecute.plan(args, env);
  if (plan.kind !== 'proceed') throw new Error('expected proceed');
  const obs = await bashExecute.execute(args, plan.intent, env, { generation: 1, assertLeaseHeld: () => {} });
  return { obs, workspace, intent: plan.intent };
}

describe('bash_execute', () => {
  it('runs in bubblewrap on this machine (the sandbox the tests rely on)', () => {
    expect(sandboxAvailability()).toEqual({ kind: 'bubblewrap', note: null });
  });

  it('runs in the workspace with a scrubbed environment and reports stdout, stderr and status', async () => {
    process.env.SETTLE_TEST_SECRET = 'must-not-leak';
    const { obs, workspace } = await run('pwd; echo "secret=${SETTLE_TEST_SECRET:-unset} home=$HOME"; echo oops >&2; exit 3');
    delete process.env.SETTLE_TEST_SECRET;
    expect(obs).toEqual({ output: `${workspace}\nsecret=unset home=/tmp\n`, error: 'oops\n', exit_status: 3, truncated: false });
  });

  it('can write the workspace but not the system, and /tmp is private', async () => {
    const hostMarker = `/tmp/settle-host-marker-${process.pid}`;
    fs.writeFileSync(hostMarker, 'host');
    try {
      const { obs, workspace } = await run(
        `echo hi > out.txt && touch /etc/settle-probe 2>/dev/null; echo "etc=$?"; test -e ${hostMarker} && echo host-tmp-visible || echo host-tmp-hidden`,
      );
      expect(fs.readFileSync(path.join(workspace, 'out.txt'), 'utf8')).toBe('hi\n');
      expect(obs.output).toBe('etc=1\nhost-tmp-hidden\n');
      expect(fs.existsSync('/etc/settle-probe')).toBe(false);
    } finally {
      fs.rmSync(hostMarker, { force: true });
    }
  });

  it('kills the whole process group at the time limit: no orphan survives', async () => {
    const marker = 987_000 + Math.floor(Math.random() * 999);
    const started = performance.now();
    const { obs } = await run(`sleep ${marker} & sleep ${marker} & echo started; wait`, { timeout_ms: 1000 });
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(obs.exit_status).toBe(124);
    expect(obs.output).toBe('started\n');
    expect(obs.error).toMatch(/timed out after 1000 ms; the process group was killed/);
    await new Promise((r) => setTimeout(r, 200));
    const survivors = spawnSync('pgrep', ['-f', `sleep ${marker}`], { encoding: 'utf8' }).stdout.trim();
    expect(survivors).toBe('');
  });

  it('truncates long output with a marker', async () => {
    const { obs } = await run('head -c 200000 /dev/zero | tr "\\0" a; echo; echo done');
    expect(obs.truncated).toBe(true);
    expect(obs.output.length).toBeLessThan(MAX_OUTPUT_BYTES + 100);
    expect(obs.output).toMatch(/\[… truncated by settle …\]$/);
  });

  describe('network', () => {
    let server: net.Server;
    let port: number;
    beforeAll(async () => {
      server = net.createServer((s) => s.end('hello from the host\n'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as net.AddressInfo).port;
    });
    afterAll(() => server.close());

    const probe = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 || echo no-connection`;

    it('is blocked without the connect right', async () => {
      const { obs } = await run(probe());
      expect(obs.output).toBe('no-connection\n');
    });

    // Issue 12 item 4: with the host's network shared, a command holding `connect` reached the
    // worker's own services on loopback (its Postgres). Until egress goes through a proxy that
    // allows only the capability's hosts, `connect` grants no network at all (fail closed).
    it("with the connect right still cannot reach the host's loopback services, and says so", async () => {
      const { obs, intent } = await run(probe(), { network: true });
      expect(obs.output).toBe('no-connection\n');
      expect(obs.error).toMatch(/connect right grants no network yet/);
      expect(intent.network).toBe(true);
    });
  });

  it('an in-doubt shell call is never guessed: the probe says unknown', async () => {
    const workspace = tempWorkspace('bash');
    const trajectoryId = uniqueId('bash');
    const args: BashExecuteArgs = { command: 'echo deploy >> log.txt', timeout_ms: 5000 };
    const call = {
      key: deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args }),
      trajectoryId,
      turn: 0,
      callId: 'c',
      tool: 'bash_execute',
      args,
    };
    // The executor dies mid-command: simulate by claiming, recording intent and marking in doubt.
    await store.claim(call, { leaseMs: 60_000, holder: 'dead' });
    const plan = await bashExecute.plan(args, { workspace });
    if (plan.kind !== 'proceed') throw new Error('expected proceed');
    await store.recordIntent(call.key, 1, plan.intent, 'worker:dead');
    await store.markInDoubt(call.key, 1, 'worker died', 'worker:dead');

    const record = (await store.get(call.key))!;
    const verdict = await bashExecute.probe(args, record.intent as never, { workspace });
    expect(verdict).toMatchObject({ verdict: 'unknown', detail: expect.stringMatching(/operator must settle it/) });
    expect(await applyProbe(store, record, verdict)).toEqual({ state: 'IN_DOUBT', applied: false });
    // And a repeat is refused while it is in doubt.
    expect((await runSettled(store, bashExecute, call, { workspace }, { leaseMs: 5000, holder: 'w2' })).kind).toBe('in_doubt');
    expect(fs.existsSync(path.join(workspace, 'log.txt'))).toBe(false);
  });
});
