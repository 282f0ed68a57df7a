/**
 * What an on-call SRE sees (issue 14): the unblock command in the current details, a shell call
 * in doubt waiting for an operator without re-probing, `settle status` without a worker, key
 * prefixes, outcomes that never read as plain success, static summaries, approving twice, a
 * parent's sub-agents. Real worker processes, real Temporal, real Postgres.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { SA_PARENT_TRAJECTORY, SA_PROBLEM_COUNT, SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import type { TrajectoryResult } from '../../workflows/definitions';
import { runSettle, runSettleAsync } from '../support/cli';
import { openTestDb, startTestWorker, tempWorkspace, testStore, uniqueId, type RunningWorker } from '../support/env';
import { inDoubtShellCall, until } from '../support/in-doubt';
import { TEST_OPERATOR } from '../support/operator';
import { activityResults } from '../support/history';

const db = openTestDb(2);
const store = testStore(db);
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
let connection: Connection;
let client: Client;
let worker: RunningWorker;
let settle: SettleClient;

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
  worker = await startTestWorker();
  settle = new SettleClient(worker.client, worker.taskQueue);
});
afterAll(async () => {
  await worker?.stop();
  await connection?.close();
  await db.destroy();
});

/** Event types and activity names of a workflow's history. */
async function historyOf(trajectoryId: string): Promise<{ activities: string[]; timers: number; events: number }> {
  const history = await client.workflow.getHandle(trajectoryId).fetchHistory();
  const events = history.events ?? [];
  return {
    activities: events.flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : [],
    ),
    timers: events.filter((e) => e.timerStartedEventAttributes).length,
    events: events.length,
  };
}

describe('a shell call in doubt (its probe: started, no exit, not running)', { timeout: 240_000 }, () => {
  it('is probed once, then waits for an operator without re-probing, shows the exact command in a code block, and settles by key prefix', async () => {
    const call = await inDoubtShellCall(client, store);
    try {
      const { handle, key, trajectoryId } = call;
      // Long enough for the old behaviour (probe, 5 s timer, probe again) to show a second round.
      await new Promise((r) => setTimeout(r, 7_000));
      const history = await historyOf(trajectoryId);
      // One probe round (its answer is a final unknown: the command died with its worker), then no timer.
      expect(history.activities.filter((a) => a === 'probeToolCall')).toHaveLength(1);
      expect(history.timers).toBe(0);

      const details = await handle.query<string>('waitingFor');
      const [summary, blank, callLine, ...rest] = details.split('\n');
      // A short first line (what waits, since when), then the call: tool, target, key, deadline.
      expect(summary).toMatch(/^\*\*waiting for an operator\*\* · since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
      expect(blank).toBe('');
      expect(callLine).toMatch(/^`bash_execute` `echo deployed >> deploy\.log` · key `[0-9a-f]{16}` · no deadline$/);
      // Complete commands (continued with a backslash) inside a fenced block: Markdown leaves them as they are.
      const block = rest
        .join('\n')
        .match(/```sh\n([\s\S]*?)\n```/)?.[1]
        ?.split('\n');
      expect(block).toEqual([
        `npx settle resolve ${key} \\`,
        `  --generation 1 --as applied --reason 'what you checked'`,
        `npx settle resolve ${key} \\`,
        `  --generation 1 --as not-applied --reason 'what you checked'`,
        `npx settle resolve ${key} \\`,
        `  --generation 1 --as partial --reason 'what you checked'`,
      ]);

      // status: outcome column, probes apart from attempts, aligned columns.
      const status = await runSettleAsync(['status', trajectoryId], { env: cliEnv });
      expect(status.stderr).toBe('');
      const lines = status.stdout.split('\n');
      const header = lines.find((l) => l.startsWith('turn'))!;
      const row = lines[lines.indexOf(header) + 1]!;
      expect(header.split(/\s{2,}/)).toEqual([
        'turn',
        'call',
        'tool',
        'level',
        'key',
        'state',
        'resolution',
        'outcome',
        'attempts',
        'probes',
      ]);
      expect(row.split(/\s{2,}/)).toEqual([
        '0',
        'deploy',
        'bash_execute',
        'A2',
        key.slice(0, 16),
        'IN_DOUBT',
        'pending',
        'in_doubt',
        '1',
        '1',
      ]);
      expect(row.indexOf('IN_DOUBT')).toBe(header.indexOf('state'));
      // The details block prints as lines that paste: no escaped line breaks.
      expect(status.stdout).not.toContain('\\x0a');
      expect(lines).toContain(`npx settle resolve ${key} \\`);
      expect(lines).toContain(`  --generation 1 --as applied --reason 'what you checked'`);

      // The 16 digits status prints are enough to settle it.
      const resolved = await runSettleAsync(['resolve', key.slice(0, 16), '--as', 'applied', '--reason', 'deploy.log has the line'], {
        env: cliEnv,
      });
      expect(resolved.stderr).toBe('');
      expect(resolved.stdout).toContain('via the settleCall update');
      const result = (await handle.result()) as TrajectoryResult;
      expect(result.calls[0]).toMatchObject({ resolution: 'settled_by_operator', state: 'COMPLETED', attempts: 2 });
      expect(result.calls[0]!.probes).toBe(1);
      // The worker died just after letting the command through its start gate: whether the echo
      // got to write before the sandbox died with it is the race an operator settles; nobody re-ran it.
      const log = path.join(call.workspace, 'deploy.log');
      expect(['', 'deployed\n']).toContain(fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '');
    } finally {
      await call.worker.kill();
    }
  });
});

describe('settle status without a worker', () => {
  it('says no worker polls the task queue and shows the endpoint records instead of waiting', async () => {
    const trajectoryId = uniqueId('orphan');
    const taskQueue = uniqueId('tq-nobody');
    await client.workflow.start('trajectoryWorkflow', {
      taskQueue,
      workflowId: trajectoryId,
      args: [{ workspace: tempWorkspace('orphan') }],
    });
    try {
      const r = await runSettleAsync(['status', trajectoryId], { env: cliEnv });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`no worker polls task queue "${taskQueue}"`);
      expect(r.stdout).toContain('no endpoint records');
      const json = JSON.parse((await runSettleAsync(['status', trajectoryId, '--json'], { env: cliEnv })).stdout) as Record<
        string,
        unknown
      >;
      expect(json).toMatchObject({ workerPolling: false, taskQueue, records: [] });
    } finally {
      await client.workflow.getHandle(trajectoryId).terminate('test done');
    }
  });
});

describe('settle status right after a worker dies', { timeout: 240_000 }, () => {
  it('gives up on the query after a deadline, says why in one line, shows the records and exits non-zero', async () => {
    const call = await inDoubtShellCall(client, store);
    // SIGKILL: the server still lists its poller, so status believes a worker polls and asks it.
    await call.worker.kill();
    const r = await runSettleAsync(['status', call.trajectoryId], { env: cliEnv });
    expect(r.code).toBe(1);
    const lines = r.stdout.split('\n');
    expect(lines[1]).toMatch(/^the trajectory did not answer within 5 s: its worker is probably gone .*What its endpoint records say:$/);
    const row = lines.find((l) => l.includes(call.key.slice(0, 16)))!;
    // Its age counts from when its effect became unknown (the lease's expiry), with that moment.
    expect(row.split(/\s{2,}/)).toEqual([
      '0',
      'deploy',
      'bash_execute',
      call.key.slice(0, 16),
      'IN_DOUBT',
      '1',
      expect.stringMatching(/^\d+(s|m\d\ds)$/),
      expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    ]);
    const json = JSON.parse((await runSettleAsync(['status', call.trajectoryId, '--json'], { env: cliEnv })).stdout) as Record<
      string,
      unknown
    >;
    expect(json.unanswered).toMatch(/did not answer/);
    expect(json.records).toEqual([expect.objectContaining({ key: call.key, state: 'IN_DOUBT' })]);
    await call.handle.terminate('test done');
  });
});

// Each CLI run starts the TypeScript loader afresh (seconds each on a loaded machine).
describe('keys by prefix', { timeout: 150_000 }, () => {
  it('show accepts a unique prefix of 8+ hex digits and refuses an ambiguous one, naming the candidates', async () => {
    const prefix = 'feedbeef';
    const keys = ['0', '1'].map((c) => prefix + c.repeat(56));
    for (const [i, key] of keys.entries()) {
      await store.claim(
        { key, trajectoryId: uniqueId('prefix'), turn: 0, callId: `c${i}`, tool: 'file_edit', args: {} },
        { leaseMs: 60_000, holder: 'test' },
      );
    }
    const ambiguous = await runSettle(['show', prefix], { env: cliEnv });
    expect(ambiguous.stderr).toContain(`KEY argument ${prefix}: must start exactly one key; it is ambiguous`);
    expect(ambiguous.code).toBe(2);
    for (const key of keys) expect(ambiguous.stderr).toContain(key);

    const unique = await runSettle(['show', `${prefix}1111`], { env: cliEnv });
    expect(unique.stderr).toBe('');
    expect(unique.stdout).toMatch(new RegExp(`^key\\s+${keys[1]}$`, 'm'));

    expect((await runSettle(['show', 'feedbee'], { env: cliEnv })).stderr).toMatch(
      /KEY argument: must be .* a unique prefix of at least 8/,
    );
    expect((await runSettle(['show', 'abababab'], { env: cliEnv })).stderr).toContain(
      'KEY argument abababab: must start a key; no endpoint record has a key starting with it',
    );
  });
});

describe('outcomes, summaries, approvals', () => {
  it('a tool error and a replay read as error and replayed in status and in the activity result', async () => {
    const ws = tempWorkspace('outcome');
    const file = path.join(ws, 'app.ts');
    fs.writeFileSync(file, 'v1\n');
    const id = uniqueId('outcome');
    await settle.start(id, { workspace: ws });
    const edit = { call_id: 'e1', tool: 'file_edit', args: { path: file, old_str: 'v1', new_str: 'v2' } };
    await settle.runTurn(id, 0, [edit, { call_id: 'e2', tool: 'file_edit', args: { path: file, old_str: 'nope', new_str: 'x' } }]);
    await settle.handle(id).executeUpdate('runTurn', { args: [{ turn: 0, calls: [edit] }], updateId: 'again' });

    const r = await runSettleAsync(['status', id], { env: cliEnv });
    expect(r.stderr).toBe('');
    const rows = r.stdout.split('\n').filter((l) => /^0\s/.test(l));
    expect(rows.map((l) => l.split(/\s{2,}/)[7])).toEqual(['ok', expect.stringMatching(/^error: old_str matched 0 blocks/), 'replayed']);

    // The outcome label is in each attempt's result (file_edit runs in the local lane: its markers hold them).
    const results = (await activityResults(client, id, 'executeToolCall')) as { outcome?: string }[];
    expect(results.map((r) => r.outcome)).toEqual(['ok', 'error', 'replayed']);
    await settle.finish(id, 'completed', 'done');
  });

  it('a trajectory whose calls errored or were refused completes with problems; a clean one completes', async () => {
    const ws = tempWorkspace('problems');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'a\n');
    const broken = uniqueId('problems');
    await settle.start(broken, { workspace: ws });
    await settle.runTurn(broken, 0, [
      { call_id: 'e1', tool: 'file_edit', args: { path: path.join(ws, 'a.txt'), old_str: 'nope', new_str: 'x' } },
      { call_id: 'e2', tool: 'no_such_tool', args: {} },
    ]);
    await settle.finish(broken, 'completed', 'done');
    const clean = uniqueId('clean');
    await settle.start(clean, { workspace: ws });
    await settle.runTurn(clean, 0, [{ call_id: 'v1', tool: 'file_view', args: { path: path.join(ws, 'a.txt'), offset: 1, limit: 10 } }]);
    await settle.finish(clean, 'completed', 'done');

    const attributes = async (id: string) => {
      await settle.handle(id).result();
      const sa = (await settle.handle(id).describe()).typedSearchAttributes;
      return { status: sa.get(SA_TRAJECTORY_STATUS), problems: sa.get(SA_PROBLEM_COUNT) };
    };
    expect(await attributes(broken)).toEqual({ status: 'completed_with_problems', problems: 2 });
    expect(await attributes(clean)).toEqual({ status: 'completed', problems: 0 });
    expect((await settle.status(broken)).status).toBe('completed_with_problems');
  });

  it('start sets the static summary (given or derived from the input)', async () => {
    const id = uniqueId('summary');
    await settle.start(id, { workspace: tempWorkspace('summary') }, { summary: 'ticket 4711: bump replicas' });
    expect(await (await settle.handle(id).describe()).staticSummary()).toBe('ticket 4711: bump replicas');
    const derived = uniqueId('summary');
    const ws = tempWorkspace('summary');
    await settle.start(derived, { workspace: ws });
    expect(await (await settle.handle(derived).describe()).staticSummary()).toBe(
      `settle trajectory · orchestrator-driven (runTurn updates) · workspace ${ws}`,
    );
    expect((await settle.status(derived)).summary).toBe(`settle trajectory · orchestrator-driven (runTurn updates) · workspace ${ws}`);
    await Promise.all([id, derived].map((t) => settle.finish(t, 'completed', 'done')));
  });

  it('approve takes a key prefix, shows a labelled deadline, and a second decision is refused saying who decided', async () => {
    const id = uniqueId('a3');
    await settle.start(id, { workspace: tempWorkspace('a3'), levelOverrides: { bash_execute: 'A3' } });
    const turn = settle.runTurn(id, 0, [{ call_id: 'rm', tool: 'bash_execute', args: { command: 'echo ok' } }]);
    const pending = await until(async () => {
      const s = await settle.status(id);
      return s.status === 'waiting_approval' ? s : null;
    }, 'waiting_approval');
    const key = pending.calls[0]!.key!;
    expect(pending.waitingFor!.split('\n').slice(0, 3)).toEqual([
      expect.stringMatching(/^\*\*waiting for approval\*\* · since \S+ \S+ UTC$/),
      '',
      expect.stringMatching(/^`bash_execute` `echo ok` · key .* · deadline \S+ \S+ UTC \(then denied\)$/),
    ]);
    // What the approval lets run, whole, in the details the Web UI shows.
    expect(pending.waitingFor).toContain('Arguments, in full:\n\n```json\n{"command":"echo ok","timeout_ms":30000}\n```');
    // The approver is the operator whose key signs: the command has no name to fill in.
    expect(pending.waitingFor).toContain(`npx settle approve ${id} ${key} \\\n  --reason 'change ticket or why'\n`);
    const timers = ((await client.workflow.getHandle(id).fetchHistory()).events ?? []).filter((e) => e.timerStartedEventAttributes);
    expect(timers.map((t) => t.userMetadata?.summary?.data && Buffer.from(t.userMetadata.summary.data).toString())).toEqual([
      `"approval deadline ${key.slice(0, 8)}… (then denied)"`,
    ]);

    // The command as shown, pasted into a shell in the project with a reason: it runs as it stands
    // (`npx settle` is the project's own bin; nothing named settle need be on PATH).
    const shown = pending
      .waitingFor!.match(/```sh\n([\s\S]*?)\n```/)![1]!
      .split('\n')
      .slice(0, 2)
      .join('\n');
    const first = await shell(shown.replace("'change ticket or why'", 'CHG-1'), cliEnv);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect((await turn).calls[0]).toMatchObject({ resolution: 'executed', approval: { approver: TEST_OPERATOR } });
    const second = await runSettleAsync(['approve', id, key.slice(0, 8), '--reason', 'again'], { env: cliEnv });
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`was already approved by ${TEST_OPERATOR} (CHG-1)`);
    await settle.finish(id, 'completed', 'done');
  });

  it("a parent's status names its sub-agents", async () => {
    // The link is the SettleParentTrajectory search attribute a sub-agent carries. (Ids under
    // `<parent>/sub-` are reserved for the children a parent spawns itself, so this stand-in for a
    // sub-agent carries the attribute under another id.)
    const parent = uniqueId('parent');
    await settle.start(parent, { workspace: tempWorkspace('parent') });
    const child = `${parent}-child`;
    await client.workflow.start('trajectoryWorkflow', {
      taskQueue: worker.taskQueue,
      workflowId: child,
      args: [{ workspace: tempWorkspace('child'), parentTrajectoryId: parent }],
      typedSearchAttributes: [{ key: SA_PARENT_TRAJECTORY, value: parent }],
    });
    const status = await until(async () => {
      const s = await runSettleAsync(['status', parent], { env: cliEnv });
      return s.stdout.includes('sub-agents:') ? s : null;
    }, 'sub-agents listed');
    expect(status.stdout).toContain(`sub-agents: ${child} (RUNNING · running)`);
    await Promise.all([parent, child].map((t) => settle.finish(t, 'completed', 'done')));
  });
});

/** Runs a command line in a shell in the project directory, as an operator pasting it would. */
function shell(commandLine: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', commandLine], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
