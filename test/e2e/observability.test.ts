/**
 * Metrics and logs of a real worker process (workers/worker.ts): its Prometheus endpoint on
 * SETTLE_METRICS_PORT answers settle's counters and Temporal's runtime metrics, and the counters
 * move with what trajectories do; every log line is one JSON object, and every line about a call
 * names its trajectory, turn, call id, key and generation.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../../stack/ports';
import { runSettleAsync } from '../support/cli';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { inDoubtShellCall, type InDoubtShellCall } from '../support/in-doubt';

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
    expect(sample(before, 'settle_records', { state: 'IN_DOUBT' })).toBeGreaterThanOrEqual(1);
    // Temporal's runtime metrics, relayed on the same endpoint.
    expect(before).toMatch(/^temporal_\w+/m);

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
            { turn: 0, calls: [edit, { call_id: 'bad', tool: 'file_edit', args: { path: file, old_str: 'v1' } }] },
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
    const callLines = parsed.filter((l) => typeof l.event === 'string' && l.event !== 'malformed_call' && 'trajectoryId' in l);
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
        }),
      );
    }
    expect(callLines.find((l) => l.event === 'in_doubt')).toMatchObject({
      trajectoryId: call.trajectoryId,
      turn: 0,
      callId: 'deploy',
      key: call.key,
      generation: 1,
      cause: 'lease_expired',
    });
    expect(parsed.find((l) => l.event === 'malformed_call')).toMatchObject({ trajectoryId, turn: 0, callId: 'bad', tool: 'file_edit' });
  });
});
