/**
 * Optional OpenTelemetry tracing (workers/tracing.ts): a real worker process started with the
 * standard OTEL_EXPORTER_OTLP_ENDPOINT sends a span per activity execution, by OTLP over HTTP, to
 * a local receiver (a plain Node HTTP server standing in for a collector).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import type { WorkerProcess } from '../../chaos/infra/worker-process';
import type { TrajectoryResult } from '../../workflows/trajectory';
import { tempWorkspace, uniqueId } from '../support/env';
import { until, workerProcess } from '../support/in-doubt';

interface ReceivedSpan {
  name: string;
  attributes: Record<string, unknown>;
}

const received: ReceivedSpan[] = [];
const paths: string[] = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8').on('data', (d: string) => (body += d));
  req.on('end', () => {
    paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
    // OTLP/HTTP JSON: resourceSpans → scopeSpans → spans, attributes as [{ key, value: { stringValue } }].
    const doc = JSON.parse(body) as {
      resourceSpans?: { scopeSpans?: { spans?: { name: string; attributes?: { key: string; value: Record<string, unknown> }[] }[] }[] }[];
    };
    for (const rs of doc.resourceSpans ?? [])
      for (const ss of rs.scopeSpans ?? [])
        for (const span of ss.spans ?? []) {
          received.push({
            name: span.name,
            attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])),
          });
        }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
let worker: WorkerProcess | undefined;

afterAll(async () => {
  await worker?.kill();
  await new Promise((r) => receiver.close(r));
});

describe('OpenTelemetry tracing, enabled by the environment', { timeout: 180_000 }, () => {
  it('a worker with OTEL_EXPORTER_OTLP_ENDPOINT exports a span per activity execution, naming the trajectory', async () => {
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const taskQueue = uniqueId('tq-otel');
    // Export every 200 ms rather than the default 5 s.
    worker = workerProcess(taskQueue, '', { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '200' });
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const trajectoryId = uniqueId('otel');
      const result = (await new Client({ connection }).workflow.execute('trajectoryWorkflow', {
        taskQueue,
        workflowId: trajectoryId,
        args: [
          {
            workspace: tempWorkspace('otel'),
            turns: [{ turn: 0, calls: [{ call_id: 'c1', tool: 'bash_execute', args: { command: 'echo traced' } }] }],
          },
        ],
      })) as TrajectoryResult;
      expect(result.calls[0]).toMatchObject({ state: 'COMPLETED', resolution: 'executed' });

      const span = await until(
        async () => received.find((s) => s.name === 'RunActivity:executeToolCall' && s.attributes.temporalWorkflowId === trajectoryId),
        'the executeToolCall span at the receiver',
        60_000,
      );
      expect(span.attributes.temporalActivityId).toEqual(expect.any(String));
      expect(paths[0]).toMatch(/^POST \/v1\/traces application\/json/);
    } finally {
      await connection.close();
    }
  });
});
