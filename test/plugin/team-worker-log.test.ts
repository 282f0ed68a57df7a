/**
 * A team worker's log (SettlePlugin in the team's own process, the SDK's default logger): settle's
 * own lines are JSON, one per event, each naming the worker; a call whose effect became unknown
 * is one WARN line with its trajectory, call id, key and reason, and no stack trace anywhere. The
 * team's logger stays the team's: the SDK's lines keep its format on stderr.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { callKey } from '../../api/testing';
import { tempWorkspace, uniqueId } from '../support/env';
import type { teamWorkflow } from './fixtures/workflows';
import { killWorkerProcesses, startWorkerProcess } from '../support/worker-process';

const WORKER = fileURLToPath(new URL('./fixtures/team-worker.ts', import.meta.url));
const WORKFLOWS = fileURLToPath(new URL('./fixtures/workflows.ts', import.meta.url));
let bundlePath: string;
let connection: Connection;

beforeAll(async () => {
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: quietLogger });
  bundlePath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-team-log-')), 'bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);
  connection = await Connection.connect({ address: inject('temporalAddress') });
}, 120_000);

afterAll(async () => {
  killWorkerProcesses();
  await connection?.close();
});

describe('a team worker’s log', () => {
  it('has one JSON line per settle event naming the worker, and an in-doubt call is one WARN line without a stack', async () => {
    const client = new Client({ connection });
    const taskQueue = uniqueId('team-log');
    const workflowId = uniqueId('team-log');
    const file = path.join(tempWorkspace('team-log'), 'log.txt');
    const args = { file, text: 'dropped' };
    const key = callKey({ workflowId, callId: 'w1', tool: 'append_line', args });

    // The line is written, then the tool throws: IN_DOUBT; the probe finds the line and settles it.
    const worker = startWorkerProcess(WORKER, {
      TEAM_TASK_QUEUE: taskQueue,
      TEAM_WORKFLOW_BUNDLE: bundlePath,
      TEAM_FAIL_AFTER_EFFECT: 'dropped',
    });
    let stdout = '';
    let stderr = '';
    worker.child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
    worker.child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const [result] = await client.workflow.execute<typeof teamWorkflow>('teamWorkflow', {
      workflowId,
      taskQueue,
      args: [[{ tool: 'append_line', args, callId: 'w1' }]],
    });
    expect(result).toMatchObject({ key, resolution: 'settled_by_probe', state: 'COMPLETED' });
    worker.child.kill('SIGTERM');
    await worker.exited;

    // Every line settle wrote is one JSON object naming this worker process.
    const lines = stdout.split('\n').filter((l) => l.trim() !== '');
    const entries = lines.map((line) => {
      expect(() => JSON.parse(line), line).not.toThrow();
      return JSON.parse(line) as Record<string, unknown>;
    });
    for (const entry of entries) {
      expect(entry).toMatchObject({ worker: `settle-worker@${os.hostname()}:${worker.child.pid}`, pid: worker.child.pid });
    }
    const ofCall = entries.filter((e) => e.key === key);
    expect(ofCall.map((e) => e.event)).toEqual(expect.arrayContaining(['claimed', 'in_doubt', 'probed', 'settled']));
    for (const e of ofCall) expect(e).toMatchObject({ trajectoryId: workflowId, callId: 'w1', key });

    // The in-doubt call: exactly one WARN line, with its reason; nothing else of it above INFO.
    const warnings = ofCall.filter((e) => e.level !== 'info');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      level: 'warn',
      msg: 'call in_doubt',
      cause: 'exception',
      detail: 'execution ended with an exception, effect unknown: the connection dropped after the write',
    });

    // No stack trace anywhere, and no SDK "Activity failed" warning for the in-doubt attempt.
    expect(`${stdout}\n${stderr}`).not.toMatch(/^\s+at /m);
    expect(stderr).not.toMatch(/\[WARN\] Activity failed/);
    expect(stderr).toContain('team worker polling');
  }, 120_000);
});

const quietLogger = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
