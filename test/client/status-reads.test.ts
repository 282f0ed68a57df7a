/**
 * `settle status` reads Temporal over its own lean gRPC reader (client/status/grpc-reads.ts);
 * `SettleClient.status` reads through Temporal's client. Against the real server both must tell
 * the same report, for a completed trajectory, a running one answering queries, one with a
 * sub-agent and one no worker polls; and the reader must send what Temporal's client sends
 * (API key, namespace header, the profile's metadata).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { SettleClient } from '../../client/index';
import { loadTemporalTarget, type TemporalTarget } from '../../client/connection';
import { GrpcTrajectoryReads } from '../../client/status/grpc-reads';
import { trajectoryStatusReport, type TrajectoryStatusReport } from '../../client/status/report';
import { SA_PARENT_TRAJECTORY } from '../../workflows/search-attributes';
import { startTestWorker, tempWorkspace, uniqueId, type RunningWorker } from '../support/env';

let worker: RunningWorker;
let settle: SettleClient;
let reads: GrpcTrajectoryReads;

beforeAll(async () => {
  worker = await startTestWorker();
  settle = new SettleClient(worker.client, worker.taskQueue);
  reads = new GrpcTrajectoryReads(loadTemporalTarget({ address: inject('temporalAddress'), taskQueue: worker.taskQueue }));
});
afterAll(async () => {
  reads?.close();
  await worker?.stop();
});

/** Both readers' reports, with the liveness verdict left to each (it is read off the same pollers). */
async function bothReports(id: string): Promise<[TrajectoryStatusReport, TrajectoryStatusReport]> {
  return [await trajectoryStatusReport(reads, id), await settle.status(id)];
}

describe('the lean status reader against Temporal', () => {
  it('tells a completed trajectory as Temporal’s client does: calls from its result, summary, search attributes', async () => {
    const id = uniqueId('status-done');
    const ws = tempWorkspace('status-done');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'one\ntwo\n');
    await settle.start(id, {
      workspace: ws,
      turns: [
        { turn: 0, calls: [{ call_id: 'v', tool: 'file_view', args: { path: path.join(ws, 'a.txt'), offset: 1, limit: 2 } }] },
        { turn: 1, calls: [{ call_id: 'e', tool: 'file_edit', args: { path: path.join(ws, 'a.txt'), old_str: 'two', new_str: '2' } }] },
      ],
    });
    await settle.result(id);
    const [lean, full] = await bothReports(id);
    expect(lean).toEqual(full);
    expect(lean).toMatchObject({ runStatus: 'COMPLETED', status: 'completed', inDoubt: 0, workerPolling: true, unanswered: null });
    expect(lean.summary).toContain('2 scripted turn(s)');
    expect(lean.calls.map((c) => [c.callId, c.resolution])).toEqual([
      ['v', 'read'],
      ['e', 'executed'],
    ]);
  });

  it('asks a running trajectory its calls and what it waits for, and lists its sub-agents', async () => {
    const parent = uniqueId('status-parent');
    const ws = tempWorkspace('status-parent');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'x\n');
    await settle.start(parent, { workspace: ws });
    await settle.runTurn(parent, 0, [{ call_id: 'v', tool: 'file_view', args: { path: path.join(ws, 'a.txt'), offset: 1, limit: 1 } }]);
    const child = `${parent}-child`;
    await worker.client.workflow.start('trajectoryWorkflow', {
      taskQueue: worker.taskQueue,
      workflowId: child,
      args: [{ workspace: tempWorkspace('status-child'), parentTrajectoryId: parent }],
      typedSearchAttributes: [{ key: SA_PARENT_TRAJECTORY, value: parent }],
    });
    // Visibility is eventually consistent: wait until the child is listed with its first status, then compare.
    const listed = async () => (await reads.subAgents(parent, 5_000))[0]?.status === 'running';
    for (let i = 0; i < 100 && !(await listed()); i++) await new Promise((r) => setTimeout(r, 100));
    const [lean, full] = await bothReports(parent);
    expect(lean).toEqual(full);
    expect(lean).toMatchObject({ runStatus: 'RUNNING', status: 'running', subAgents: [{ trajectoryId: child, runStatus: 'RUNNING' }] });
    expect(lean.calls).toHaveLength(1);
    expect(lean.waitingFor).toEqual(expect.any(String));
    await Promise.all([parent, child].map((t) => settle.finish(t, 'completed', 'done')));
  });

  it('says no worker polls a queue nobody serves, and asks the trajectory nothing', async () => {
    const id = uniqueId('status-orphan');
    await worker.client.workflow.start('trajectoryWorkflow', {
      taskQueue: uniqueId('tq-nobody'),
      workflowId: id,
      args: [{ workspace: tempWorkspace('status-orphan') }],
    });
    const [lean, full] = await bothReports(id);
    expect(lean).toEqual(full);
    expect(lean).toMatchObject({ runStatus: 'RUNNING', workerPolling: false, calls: [], waitingFor: null, unanswered: null });
    await worker.client.workflow.getHandle(id).terminate('test done');
  });

  it('fails describing an unknown trajectory with gRPC NOT_FOUND', async () => {
    await expect(trajectoryStatusReport(reads, uniqueId('status-none'))).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });
});

describe("the lean status reader's connection", () => {
  let server: grpc.Server;
  let port: number;
  const seen: grpc.Metadata[] = [];

  beforeAll(async () => {
    server = new grpc.Server();
    // Answers every WorkflowService method NOT_FOUND, keeping what each call carried.
    const handler: grpc.handleUnaryCall<Buffer, Buffer> = (call, callback) => {
      seen.push(call.metadata);
      callback({ code: grpc.status.NOT_FOUND, details: 'nothing here' });
    };
    server.addService(
      {
        DescribeWorkflowExecution: {
          path: '/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkflowExecution',
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      { DescribeWorkflowExecution: handler },
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
  });
  afterAll(() => server?.forceShutdown());

  it("sends the API key, the namespace header and the profile's metadata, as Temporal's client does", async () => {
    const target: TemporalTarget = {
      connectionOptions: { address: `127.0.0.1:${port}`, apiKey: 'key-123', tls: false, metadata: { 'x-team': 'payments' } },
      namespace: 'acme.prod',
      taskQueue: 'settle',
      addressConfigured: true,
    };
    const lean = new GrpcTrajectoryReads(target);
    try {
      await expect(lean.describe('t-1', 5_000)).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    } finally {
      lean.close();
    }
    const metadata = seen.at(-1)!;
    expect(metadata.get('authorization')).toEqual(['Bearer key-123']);
    expect(metadata.get('temporal-namespace')).toEqual(['acme.prod']);
    expect(metadata.get('x-team')).toEqual(['payments']);
  });
});
