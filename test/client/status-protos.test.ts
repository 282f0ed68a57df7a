/**
 * `settle status` speaks Temporal's API through a generated subset of `@temporalio/proto`
 * (client/status/workflow-service-subset.generated.ts): it must be what the installed SDK's
 * descriptors give, and encode and decode the status methods' messages exactly as the full API does.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import protobuf from 'protobufjs/light.js';
import { statusProtoSource } from '../../scripts/generate-status-protos';
import { STATUS_METHODS, WORKFLOW_SERVICE } from '../../client/status/methods';
import { WORKFLOW_SERVICE_SUBSET } from '../../client/status/workflow-service-subset.generated';

const GENERATED = fileURLToPath(new URL('../../client/status/workflow-service-subset.generated.ts', import.meta.url));
const full = proto as unknown as protobuf.Root;

describe("settle status's protobuf subset", () => {
  it('is what the installed @temporalio/proto gives (regenerate: npm run generate:status-protos)', () => {
    expect(fs.readFileSync(GENERATED, 'utf8')).toBe(statusProtoSource());
  });

  it('holds every status method, and a fraction of the API', () => {
    const subset = protobuf.Root.fromJSON(WORKFLOW_SERVICE_SUBSET);
    const service = subset.lookupService(WORKFLOW_SERVICE);
    expect(Object.keys(service.methods).sort()).toEqual([...STATUS_METHODS].sort());
    const count = (ns: protobuf.NamespaceBase): number =>
      ns.nestedArray.reduce(
        (n, o) =>
          n +
          (o instanceof protobuf.Type || o instanceof protobuf.Enum ? 1 : 0) +
          (o instanceof protobuf.Namespace || o instanceof protobuf.Type ? count(o) : 0),
        0,
      );
    expect(count(subset)).toBeLessThan(count(full) / 3);
  });

  it('encodes and decodes the status messages byte for byte as the full API does', () => {
    const subset = protobuf.Root.fromJSON(WORKFLOW_SERVICE_SUBSET);
    const ns = 'temporal.api.workflowservice.v1';
    const samples: [string, Record<string, unknown>][] = [
      [
        'DescribeWorkflowExecutionResponse',
        {
          executionConfig: {
            taskQueue: { name: 'settle' },
            userMetadata: { summary: { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"s"') } },
          },
          workflowExecutionInfo: {
            execution: { workflowId: 't-1', runId: 'r' },
            status: 2,
            taskQueue: 'settle',
            historyLength: 12,
            searchAttributes: {
              indexedFields: {
                SettleInDoubtCount: { metadata: { encoding: Buffer.from('json/plain'), type: Buffer.from('Int') }, data: Buffer.from('1') },
              },
            },
          },
          pendingActivities: [{ activityId: '1', attempt: 3 }],
        },
      ],
      ['DescribeTaskQueueResponse', { pollers: [{ identity: 'w', lastAccessTime: { seconds: 1_700_000_000, nanos: 5 } }] }],
      [
        'ListWorkflowExecutionsResponse',
        { executions: [{ execution: { workflowId: 'c' }, status: 1 }], nextPageToken: Buffer.from([1, 2]) },
      ],
      [
        'QueryWorkflowResponse',
        { queryResult: { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('[]') }] } },
      ],
      [
        'GetWorkflowExecutionHistoryResponse',
        {
          history: {
            events: [
              {
                eventId: 9,
                eventType: 2,
                workflowExecutionCompletedEventAttributes: { result: { payloads: [{ data: Buffer.from('{}') }] } },
              },
            ],
          },
        },
      ],
      ['QueryWorkflowRequest', { namespace: 'default', execution: { workflowId: 't-1' }, query: { queryType: 'calls' } }],
    ];
    for (const [name, value] of samples) {
      const a = full.lookupType(`${ns}.${name}`);
      const b = subset.lookupType(`${ns}.${name}`);
      const bytes = a.encode(a.fromObject(value)).finish();
      expect(Buffer.from(b.encode(b.fromObject(value)).finish()), name).toEqual(Buffer.from(bytes));
      const options = { longs: Number, enums: String, bytes: String };
      expect(b.toObject(b.decode(bytes), options), name).toEqual(a.toObject(a.decode(bytes), options));
    }
  });
});
