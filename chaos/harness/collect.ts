/** What a scenario's run left behind, read back: the records' event trails, the histories' workflow task failures and lane attempts, the renewal count. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import proto from '@temporalio/proto';
import type { openDatabase } from '../../activities/store/database';
import type { EndpointStore } from '../../activities/store/endpoint-store';
import { renewStatement } from '../../activities/store/statements';
import { errorMessage } from '../../core/errors';
import type { SettleClient } from '../../client/index';
import { countLaneAttempts } from './lanes';
import type { CallTrail } from './metrics';
import type { LaneAttempts } from './scenario-types';

const { temporal } = proto;

export async function callTrails(store: EndpointStore, trajectoryIds: string[]): Promise<CallTrail[]> {
  const trails: CallTrail[] = [];
  for (const id of trajectoryIds) {
    for (const record of await store.list({ trajectoryId: id, limit: 10_000 })) {
      trails.push({ key: record.key, tool: record.tool, state: record.state, events: await store.events(record.key) });
    }
  }
  return trails;
}

/**
 * What the trajectories' histories show: workflow task failures by message — a worker paused in
 * the middle of a workflow activation fails it on resume ("Potential deadlock detected"), and the
 * task is retried; a nondeterminism error would be a defect — and where the settled calls'
 * attempts ran (local-activity markers, activity tasks).
 */
export async function historyFigures(
  settle: SettleClient,
  ids: string[],
  historiesDir?: string,
): Promise<{ taskFailures: Record<string, number>; laneAttempts: LaneAttempts }> {
  const failures: Record<string, number> = {};
  const laneAttempts: LaneAttempts = { local: 0, activity: 0 };
  const add = (message: string) => (failures[message] = (failures[message] ?? 0) + 1);
  for (const id of ids) {
    try {
      const history = await settle.handle(id).fetchHistory();
      if (historiesDir) {
        fs.mkdirSync(historiesDir, { recursive: true });
        fs.writeFileSync(path.join(historiesDir, `${id}.json`), JSON.stringify(history, null, 1));
      }
      for (const e of history.events ?? []) {
        const message = e.workflowTaskFailedEventAttributes?.failure?.message;
        if (message) add(message.slice(0, 80));
      }
      countLaneAttempts(history.events ?? [], laneAttempts);
    } catch {
      add('(history unavailable)');
    }
  }
  return { taskFailures: failures, laneAttempts };
}

/**
 * How many times the lease renewal statement ran since the cluster started: exact, from
 * pg_stat_statements (loaded by chaos/infra/postgres-server.ts). The statement is recognised by
 * the text settle prepares (activities/store/statements.ts renewStatement) up to its first literal,
 * which pg_stat_statements normalises. Null when the extension is missing or nothing matched.
 */
export async function renewalStatements(db: ReturnType<typeof openDatabase>): Promise<number | null> {
  const text = renewStatement(db).sql;
  const prefix = text.slice(0, text.indexOf("'"));
  try {
    const { rows } = await sql<{ calls: string | null; n: string }>`
      select sum(calls)::text as calls, count(*)::text as n from pg_stat_statements
      where query like ${prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%'}`.execute(db);
    return rows[0] && Number(rows[0].n) > 0 ? Number(rows[0].calls) : null;
  } catch {
    return null;
  }
}

/** Where the evidence of trajectories that did not complete is kept: the run's work directory is removed. */
export const EVIDENCE_DIR = fileURLToPath(new URL('../../.settle/chaos-evidence/', import.meta.url));

/**
 * What a trajectory that did not complete left, kept in `dir`: its history and its description,
 * whose pending workflow task says whether the run waits on a timer or an approval or its task
 * keeps failing (a retried task's failures after the first are in no history). Returns the
 * report's note.
 */
export async function keepEvidence(settle: SettleClient, id: string, dir: string): Promise<string> {
  try {
    const handle = settle.handle(id);
    const [history, description] = await Promise.all([handle.fetchHistory(), handle.describe()]);
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${id}.json`);
    fs.writeFileSync(file, JSON.stringify({ description: description.raw, history }, null, 1));
    const task = description.raw.pendingWorkflowTask;
    const pending = task
      ? `workflow task pending, attempt ${task.attempt ?? 1} (${temporal.api.enums.v1.PendingWorkflowTaskState[task.state ?? 0]})`
      : 'no workflow task pending';
    return `${pending}; history and description kept in ${file}`;
  } catch (err) {
    return `(no evidence kept: ${errorMessage(err)})`;
  }
}
