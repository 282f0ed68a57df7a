/**
 * The production topology (scripts/production-lane.ts): trajectories on the lane's task queue,
 * served by two settle worker processes against a Temporal server on PostgreSQL. Run only by
 * `npm run test:production` (vitest.production.config.ts), which sets the SETTLE_LANE_* variables.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { SA_TRAJECTORY_STATUS } from '../../workflows/search-attributes';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';

const taskQueue = process.env.SETTLE_LANE_TASK_QUEUE;
const metricsUrls = (process.env.SETTLE_LANE_METRICS_URLS ?? '').split(',').filter(Boolean);
const db = openTestDb(2);
const store = testStore(db);
let connection: Connection;
let settle: SettleClient;

beforeAll(async () => {
  if (!taskQueue || metricsUrls.length !== 2)
    throw new Error('run by npm run test:production: SETTLE_LANE_TASK_QUEUE and two SETTLE_LANE_METRICS_URLS must be set');
  connection = await Connection.connect({ address: inject('temporalAddress') });
  settle = new SettleClient(new Client({ connection }), taskQueue);
});
afterAll(async () => {
  await connection?.close();
  await db.destroy();
});

describe('production topology: Temporal on PostgreSQL, two settle workers', { timeout: 300_000 }, () => {
  it('runs 8 trajectories across both workers, each edit once, searchable by settle attributes', async () => {
    const runs = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const ws = tempWorkspace('prod');
        const file = path.join(ws, 'app.ts');
        fs.writeFileSync(file, 'v1\n');
        const id = uniqueId(`prod-${i}`);
        await settle.start(id, {
          workspace: ws,
          turns: [
            { turn: 0, calls: [{ call_id: 'e', tool: 'file_edit', args: { path: file, old_str: 'v1', new_str: 'v2' } }] },
            { turn: 1, calls: [{ call_id: 'sh', tool: 'bash_execute', args: { command: 'cat app.ts >> seen.log' } }] },
            { turn: 0, calls: [{ call_id: 'e', tool: 'file_edit', args: { path: file, old_str: 'v1', new_str: 'v2' } }] },
          ],
        });
        return { id, ws, file, result: await settle.result(id) };
      }),
    );
    for (const r of runs) {
      expect(r.result.calls.map((c) => c.resolution)).toEqual(['executed', 'executed', 'replayed']);
      expect(fs.readFileSync(r.file, 'utf8')).toBe('v2\n');
      expect(fs.readFileSync(path.join(r.ws, 'seen.log'), 'utf8')).toBe('v2\n');
      expect((await store.list({ trajectoryId: r.id })).map((rec) => rec.state)).toEqual(['COMPLETED', 'COMPLETED']);
    }
    // Visibility on PostgreSQL answers settle's search attributes.
    const ids = runs.map((r) => JSON.stringify(r.id)).join(', ');
    let found = 0;
    for (let i = 0; i < 60 && found < runs.length; i++) {
      found = (await settle.client.workflow.count(`${SA_TRAJECTORY_STATUS.name} = "completed" AND WorkflowId IN (${ids})`)).count;
      if (found < runs.length) await new Promise((r) => setTimeout(r, 1_000));
    }
    expect(found).toBe(runs.length);

    // Both workers took claims (the work was shared), as their metrics say.
    const claims = await Promise.all(
      metricsUrls.map(async (url) => {
        const text = await (await fetch(url)).text();
        return [...text.matchAll(/^settle_claims_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
      }),
    );
    expect(claims.reduce((a, b) => a + b, 0)).toBe(16);
    expect(claims.every((n) => n > 0)).toBe(true);
  });
});
