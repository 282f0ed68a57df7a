/**
 * Metrics and logs of a real worker process (workers/worker.ts): its Prometheus endpoint on
 * SETTLE_METRICS_PORT answers settle's counters and Temporal's runtime metrics, and the counters
 * move with what trajectories do; every log line is one JSON object, and every line about a call
 * names its trajectory, turn, call id, key and generation.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../../stack/ports';
import { runSettleAsync } from '../support/cli';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { inDoubtShellCall, until, type InDoubtShellCall } from '../support/in-doubt';
import { TEST_OPERATOR } from '../support/operator';

const db = openTestDb(2);
const store = testStore(db);
const cliEnv = { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: inject('databaseUrl') };
let connection: Connection | undefined;
let call: InDoubtShellCall | undefined;

afterAll(async () => {
  await call?.worker.kill();
  await connection?.close();
  await db.destroy();
});

/** One sample's value from Prometheus text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return 0;
}

describe('worker metrics and logs', { timeout: 300_000 }, () => {
  it('counts claims, replays, in-doubt transitions by cause, operator settlements and malformed calls; logs them as JSON', async () => {
    connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection });
    const port = await freePort();
    // The healthy worker serves /metrics; the first one dies mid-call, so the healthy one finds its lease expired.
    call = await inDoubtShellCall(client, store, { env: { SETTLE_METRICS_PORT: String(port) } });
    const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

    const before = await scrape();
    expect(sample(before, 'settle_in_doubt_total', { tool: 'bash_execute', cause: 'lease_expired' })).toBe(1);
    // Probe rounds, each a final unknown (the command died with its worker): the claim that found the
    // lease lapsed may probe at once and the workflow probes too, so one or two rounds, never a verdict.
    const unknownRounds = sample(before, 'settle_probe_rounds_total', { tool: 'bash_execute', verdict: 'unknown' });
    expect(unknownRounds).toBeGreaterThanOrEqual(1);
    expect(unknownRounds).toBeLessThanOrEqual(2);
    for (const verdict of ['applied', 'not_applied']) {
      expect(sample(before, 'settle_probe_rounds_total', { tool: 'bash_execute', verdict })).toBe(0);
    }
    // The installation's gauges: this worker is the one process reporting them.
    expect(sample(before, 'settle_gauge_exporter')).toBe(1);
    expect(sample(before, 'settle_records', { state: 'IN_DOUBT' })).toBeGreaterThanOrEqual(1);
    expect(sample(before, 'settle_oldest_in_doubt_age_seconds')).toBeGreaterThan(0);
    expect(sample(before, 'settle_trajectories_waiting_for_operator')).toBeGreaterThanOrEqual(1);
    expect(sample(before, 'settle_oldest_operator_wait_age_seconds')).toBeGreaterThan(0);
    // Temporal's runtime metrics, relayed on the same endpoint.
    expect(before).toMatch(/^temporal_\w+/m);

    // An A3 call waiting for approval: counted and aged (at the gauges' next refresh, within 15 s).
    const a3 = uniqueId('metrics-a3');
    const a3Handle = await client.workflow.start('trajectoryWorkflow', {
      taskQueue: call.taskQueue,
      workflowId: a3,
      args: [
        {
          workspace: tempWorkspace('metrics-a3'),
          levelOverrides: { bash_execute: 'A3' },
          turns: [{ turn: 0, calls: [{ call_id: 'rm', tool: 'bash_execute', args: { command: 'echo ok' } }] }],
        },
      ],
    });
    const waiting = await until(async () => {
      const text = await scrape();
      return sample(text, 'settle_trajectories_awaiting_approval') >= 1 && sample(text, 'settle_oldest_approval_wait_age_seconds') > 0
        ? text
        : null;
    }, 'the approval wait in the gauges');
    expect(sample(waiting, 'settle_oldest_approval_wait_age_seconds')).toBeLessThan(3_600);
    const a3Key = (await a3Handle.query<{ key: string | null }[]>('calls'))[0]!.key!;
    const approved = await runSettleAsync(['approve', a3, a3Key, '--reason', 'CHG-7'], { env: cliEnv });
    expect(approved.stderr).toBe('');
    await a3Handle.result();

    const resolved = await runSettleAsync(['resolve', call.key, '--as', 'applied', '--reason', 'checked'], {
      env: cliEnv,
    });
    expect(resolved.stderr).toBe('');
    await call.handle.result();

    // A second trajectory on the same worker: an edit, a malformed call, and the edit again (replayed).
    const ws = tempWorkspace('metrics');
    const file = path.join(ws, 'app.ts');
    fs.writeFileSync(file, 'v1\n');
    const edit = { call_id: 'e1', tool: 'file_edit', args: { path: file, old_str: 'v1', new_str: 'v2' } };
    const trajectoryId = uniqueId('metrics');
    await client.workflow.execute('trajectoryWorkflow', {
      taskQueue: call.taskQueue,
      workflowId: trajectoryId,
      args: [
        {
          workspace: ws,
          turns: [
            {
              turn: 0,
              calls: [
                edit,
                { call_id: 'bad', tool: 'file_edit', args: { path: file, old_str: 'v1' } },
                // A tool the model invented: counted under `other`, never as a series of its own.
                { call_id: 'invented', tool: 'rm_rf', args: { path: '/' } },
              ],
            },
            { turn: 0, calls: [edit] },
          ],
        },
      ],
    });
    const after = await scrape();
    expect(sample(after, 'settle_settled_total', { by: 'operator', state: 'COMPLETED' })).toBe(1);
    expect(sample(after, 'settle_claims_total', { tool: 'file_edit' })).toBe(1);
    expect(sample(after, 'settle_replays_total', { tool: 'file_edit' })).toBe(1);
    expect(sample(after, 'settle_replays_total', { tool: 'bash_execute' })).toBe(1);
    expect(sample(after, 'settle_malformed_calls_total', { tool: 'file_edit' })).toBe(1);
    expect(sample(after, 'settle_malformed_calls_total', { tool: 'other' })).toBe(1);
    expect(after).not.toContain('rm_rf');
    expect(sample(after, 'settle_operator_verdicts_total', { verdict: 'applied' })).toBe(1);
    expect(sample(after, 'settle_approval_decisions_total', { decision: 'approve' })).toBe(1);

    // Logs: every line one JSON object; every line about a call names it fully.
    const lines = call.worker
      .output()
      .split('\n')
      .filter((l) => l.trim());
    const parsed = lines.map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON log line: ${l}`);
      }
    });
    // Every call event carries its generation (null where there is no record: a malformed call, an approval).
    for (const l of parsed.filter((p) => typeof p.event === 'string' && p.source === undefined)) {
      expect(l, JSON.stringify(l)).toHaveProperty('generation');
    }
    const callLines = parsed.filter(
      (l) => typeof l.event === 'string' && typeof l.generation === 'number' && 'trajectoryId' in l && 'callId' in l,
    );
    expect(callLines.map((l) => l.event)).toEqual(expect.arrayContaining(['in_doubt', 'replayed', 'claimed', 'completed']));
    for (const l of callLines) {
      expect(l).toEqual(
        expect.objectContaining({
          ts: expect.any(String),
          trajectoryId: expect.any(String),
          turn: expect.any(Number),
          callId: expect.any(String),
          key: expect.stringMatching(/^[0-9a-f]{64}$/),
          generation: expect.any(Number),
          // The worker process that saw it: which one to look at (or kill).
          worker: expect.stringMatching(/^settle-worker@.+:\d+$/),
          pid: expect.any(Number),
        }),
      );
      expect(l.worker).toBe(`${String(l.worker).slice(0, String(l.worker).lastIndexOf(':'))}:${String(l.pid)}`);
    }
    expect(callLines.find((l) => l.event === 'in_doubt')).toMatchObject({
      trajectoryId: call.trajectoryId,
      turn: 0,
      callId: 'deploy',
      key: call.key,
      generation: 1,
      cause: 'lease_expired',
    });
    expect(parsed.find((l) => l.event === 'malformed_call')).toMatchObject({
      trajectoryId,
      turn: 0,
      callId: 'bad',
      tool: 'file_edit',
      key: null,
      generation: null,
    });
    // Logs keep the invented name (metrics do not).
    expect(parsed.find((l) => l.event === 'malformed_call' && l.callId === 'invented')).toMatchObject({ tool: 'rm_rf' });
    // A line for the probe's verdict, and one for the start of the wait for an operator.
    expect(parsed.find((l) => l.event === 'probed')).toMatchObject({
      level: 'warn',
      key: call.key,
      generation: 1,
      trajectoryId: call.trajectoryId,
      verdict: 'unknown',
      final: true,
    });
    expect(parsed.filter((l) => l.event === 'operator_wait')).toEqual([
      expect.objectContaining({ level: 'warn', key: call.key, generation: 1, trajectoryId: call.trajectoryId, callId: 'deploy' }),
    ]);
    expect(parsed.find((l) => l.event === 'approval_wait')).toMatchObject({ key: a3Key, trajectoryId: a3, callId: 'rm' });
    expect(parsed.find((l) => l.event === 'approval_decided')).toMatchObject({ key: a3Key, decision: 'approve', approver: TEST_OPERATOR });
    // The settled line says which call, by whom and why, without a second lookup.
    expect(parsed.find((l) => l.event === 'settled' && l.key === call!.key)).toMatchObject({
      by: 'operator',
      verdict: 'applied',
      trajectoryId: call.trajectoryId,
      turn: 0,
      callId: 'deploy',
      actor: `operator:${TEST_OPERATOR}`,
      reason: 'checked',
    });
  });

  it('`npm run -s worker` prints JSON lines only, on stdout and stderr, from its first line to a refused start', async () => {
    // Stopped (its process group, npm and the worker) once `enough` of its output arrived, or it exits by itself.
    const run = (env: NodeJS.ProcessEnv, enough: (out: string) => boolean) =>
      new Promise<{ code: number | null; lines: string[] }>((resolve) => {
        const child = spawn('npm', ['run', '-s', 'worker'], {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        });
        let out = '';
        const stop = () => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        };
        const collect = (b: Buffer) => {
          out += b.toString();
          if (enough(out)) stop();
        };
        child.stdout.on('data', collect);
        child.stderr.on('data', collect);
        const timer = setTimeout(stop, 90_000);
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code, lines: out.split('\n').filter((l) => l.trim()) });
        });
      });
    const json = (line: string) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      return { level: parsed.level, msg: parsed.msg };
    };
    // No database configured: one JSON error line naming the variable, exit 2.
    const refused = await run({ DATABASE_URL: '' }, () => false);
    expect(refused.code).toBe(2);
    expect(refused.lines.map(json)).toEqual([
      {
        level: 'error',
        msg: 'DATABASE_URL: must be set to the Postgres URL that holds the endpoint records (or run `settle dev`, which a worker then joins)',
      },
    ]);
    // A database that does not answer: the worker waits, saying so, in JSON.
    const waiting = await run({ DATABASE_URL: 'postgres://settle:x@127.0.0.1:1/settle' }, (out) => out.split('\n').length > 3);
    expect(waiting.lines.length).toBeGreaterThan(0);
    for (const line of waiting.lines) expect(() => json(line), line).not.toThrow();
    // What it says of the database's TLS comes first; then that it waits.
    expect(waiting.lines.map(json)).toEqual(
      expect.arrayContaining([expect.objectContaining({ level: 'info', msg: expect.stringContaining('waiting for the database') })]),
    );
  });
});
