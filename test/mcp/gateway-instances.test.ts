/**
 * Gateways for the same server name in front of different upstream instances (docs/mcp.md#one-gateway-per-session):
 * real `settle mcp serve` processes, each in front of its own ledger server (an SDK-built upstream
 * that appends one fsync'd line per execution to its own ledger). Effects are counted in the
 * ledgers: each call must land exactly once, in the upstream it was made to.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDb, tempWorkspace, testStore } from '../support/env';
import { runSettle } from '../support/cli';
import { until } from '../support/in-doubt';
import {
  closeGateways,
  LEDGER_SERVER,
  nodeCommand,
  registryFile,
  servedSession,
  stackEnv,
  startGateway,
  textOf,
  type GatewaySession,
} from './gateway-process';

const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  await closeGateways();
  await db.destroy();
});

/** The same server name for every instance; append-entry is settled, its probe reads the instance's own ledger. */
function ledgerRegistry(probe: boolean) {
  return {
    server: 'ledger',
    tools: {
      'read-ledger': { level: 'A0' },
      'append-entry': {
        level: 'A2',
        ...(probe ? { probe: { tool: 'read-ledger', args: {}, applied_if_contains: '/text', otherwise: 'not_applied' } } : {}),
      },
    },
  };
}

interface Instance {
  ledger: string;
  args: string[];
}

function instance(dir: string, name: string, probe = true): Instance {
  const ledger = path.join(dir, `${name}.ledger`);
  return {
    ledger,
    args: ['--upstream', nodeCommand(LEDGER_SERVER, ledger), '--registry', registryFile(dir, ledgerRegistry(probe)), '--ungated'],
  };
}

function entries(ledger: string): string[] {
  return fs.existsSync(ledger) ? fs.readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : [];
}

async function session(gateway: GatewaySession) {
  await until(async () => / on task queue /.test(gateway.stderr()), 'the start line');
  return servedSession(gateway.stderr());
}

function settleMeta(result: { _meta?: Record<string, unknown> }) {
  return { key: result._meta?.['io.settle/key'] as string, resolution: result._meta?.['io.settle/resolution'] as string };
}

/** A gateway expected to be refused at start: its exit code and its stderr. */
function refusedStart(args: string[]) {
  return runSettle(['mcp', 'serve', ...args], { env: stackEnv() });
}

describe('two gateways for one server name in front of two upstream instances', () => {
  it('with defaults, runs each call once in its own upstream, and refuses a third gateway that would share a queue', async () => {
    const dir = tempWorkspace('mcp-instances');
    const a = instance(dir, 'a');
    const b = instance(dir, 'b');
    const [ga, gb] = await Promise.all([startGateway(a.args), startGateway(b.args)]);
    const [sa, sb] = await Promise.all([session(ga), session(gb)]);
    expect(sa.taskQueue).not.toBe(sb.taskQueue);

    const calls = [1, 2, 3].flatMap((i) => [
      ga.call('append-entry', { text: `a-${i}` }, `call-${i}`),
      gb.call('append-entry', { text: `b-${i}` }, `call-${i}`),
    ]);
    for (const result of await Promise.all(calls)) expect(result.isError, textOf(result)).toBeFalsy();
    expect(entries(a.ledger).sort()).toEqual(['a-1', 'a-2', 'a-3']);
    expect(entries(b.ledger).sort()).toEqual(['b-1', 'b-2', 'b-3']);

    // A third gateway on a's queue (another session), or in a's session: refused in one line, before its upstream starts.
    const c = instance(dir, 'c');
    const onQueue = await refusedStart([...c.args, '--task-queue', sa.taskQueue]);
    expect(onQueue.code, onQueue.stderr).toBe(2);
    expect(onQueue.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^settle: task queue \S+: must have no other worker /)]);
    const inSession = await refusedStart([...a.args, '--trajectory', sa.trajectory]);
    expect(inSession.code, inSession.stderr).toBe(2);
    expect(inSession.stderr).toContain(`another gateway serves session ${sa.trajectory}`);
    const otherUpstream = await refusedStart([...b.args, '--trajectory', sa.trajectory]);
    expect(otherUpstream.code, otherUpstream.stderr).toBe(2);
    expect(otherUpstream.stderr).toMatch(/^settle: --trajectory: session \S+ runs in front of another upstream/);
    expect(fs.existsSync(`${c.ledger}.pid`)).toBe(false);

    expect(entries(a.ledger)).toHaveLength(3);
    expect(entries(b.ledger)).toHaveLength(3);
    await Promise.all([ga.close(), gb.close()]);
  }, 240_000);

  it('two gateways started at once for one session: one serves it, the other is refused', async () => {
    const dir = tempWorkspace('mcp-instance-race');
    const a = instance(dir, 'a');
    const args = [...a.args, '--trajectory', `mcp-race-${Date.now()}`];
    const [first, second] = await Promise.allSettled([startGateway(args), startGateway(args)]);
    const started = [first, second].filter((r) => r.status === 'fulfilled');
    const refused = [first, second].filter((r) => r.status === 'rejected');
    expect(started).toHaveLength(1);
    expect(refused).toHaveLength(1);
    // Both pass the poller check (neither polls yet): the session's lock in the database refuses one.
    expect(String(refused[0]!.reason)).toMatch(/settle: task queue \S+: must have no other (gateway|worker) /);
    const gateway = started[0]!.value;
    const result = await gateway.call('append-entry', { text: 'a-1' }, 'call-1');
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(entries(a.ledger)).toEqual(['a-1']);
    await gateway.close();
  }, 240_000);

  it('a gateway SIGKILLed mid-call is started again on its own queue: its probe asks its own upstream, the other never runs it', async () => {
    const dir = tempWorkspace('mcp-instance-restart');
    const a = instance(dir, 'a');
    const b = instance(dir, 'b');
    const gb = await startGateway(b.args);
    // Killed after a's upstream appended and before the completion was recorded.
    const ga = await startGateway(a.args, { SETTLE_FAILPOINTS: 'mcp.after_call=kill' });
    const sa = await session(ga);
    await expect(ga.call('append-entry', { text: 'a-1' }, 'call-1')).rejects.toThrow();
    await ga.exited;
    // b, alive all along, for the same server name: its worker must not take a's call.
    const other = await gb.call('append-entry', { text: 'b-1' }, 'call-1');
    expect(other.isError, textOf(other)).toBeFalsy();

    const again = await startGateway([...a.args, '--trajectory', sa.trajectory]);
    expect((await session(again)).taskQueue).toBe(sa.taskQueue);
    const result = await again.call('append-entry', { text: 'a-1' }, 'call-1');
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(settleMeta(result).resolution).toBe('settled_by_probe');
    expect(entries(a.ledger)).toEqual(['a-1']);
    expect(entries(b.ledger)).toEqual(['b-1']);
    const events = await store.events(settleMeta(result).key);
    expect(events.map((e) => e.toState)).toContain('IN_DOUBT');
    await Promise.all([again.close(), gb.close()]);
  }, 240_000);
});

describe('settle resolve while the session has no gateway', () => {
  it('answers within seconds, settles on the record, and the gateway started again takes the verdict', async () => {
    const dir = tempWorkspace('mcp-resolve-dead');
    const a = instance(dir, 'a', false);
    const first = await startGateway(a.args, { SETTLE_FAILPOINTS: 'mcp.after_call=kill' });
    const { trajectory } = await session(first);
    await expect(first.call('append-entry', { text: 'a-1' }, 'call-1')).rejects.toThrow();
    await first.exited;
    const args = [...a.args, '--trajectory', trajectory];
    // The next gateway finds the call IN_DOUBT (no probe: it waits for an operator), and dies too.
    const second = await startGateway(args);
    const waiting = second.call('append-entry', { text: 'a-1' }, 'call-1').catch(() => null);
    const key = await until(async () => (await store.list({ state: 'IN_DOUBT', trajectoryId: trajectory }))[0]?.key, 'the call IN_DOUBT');
    process.kill(second.pid, 'SIGKILL');
    await second.exited;
    await waiting;

    const started = Date.now();
    const resolved = await runSettle(['resolve', key, '--as', 'applied', '--reason', 'the ledger shows a-1'], { env: stackEnv() });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stdout).toContain('directly on the record: no worker runs trajectory');
    expect(resolved.stdout).toContain(`--trajectory ${trajectory}`);
    expect(await store.get(key)).toMatchObject({ state: 'COMPLETED' });

    const third = await startGateway(args);
    const result = await third.call('append-entry', { text: 'a-1' }, 'call-1');
    expect(result.isError, textOf(result)).toBeFalsy();
    // The call's update joined the session's waiting call (settled_by_operator) or began again and met the record (replayed).
    expect(settleMeta(result).key).toBe(key);
    expect(['settled_by_operator', 'replayed']).toContain(settleMeta(result).resolution);
    expect((await store.get(key))?.settledBy).toMatch(/^operator:/);
    expect(entries(a.ledger)).toEqual(['a-1']);
    await third.close();
  }, 300_000);
});
