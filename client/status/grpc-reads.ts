/**
 * The status report's reads over gRPC directly, for `settle status`: Temporal's client loads and
 * builds codecs for all of Temporal's API at start (about two thirds of a second of CPU), while
 * this reader builds them for the five read-only methods it calls, from a subset generated out of
 * the same `@temporalio/proto` (workflow-service-subset.generated.ts). It connects as the client
 * does: the address, TLS, mTLS, API key and metadata of client/connection.ts, and the namespace
 * header. Payloads are decoded as Temporal's default converter writes them (JSON), which is all
 * settle's workflows return.
 */
import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';
import type * as Protobuf from 'protobufjs';
import type { temporal } from '@temporalio/proto';
import type { TemporalTarget } from '../connection';
import type { TrajectoryResult } from '../../workflows/definitions';
import { WORKFLOW_SERVICE, type StatusMethod } from './methods';
import { STATUS_SEARCH_ATTRIBUTES, subAgentsQuery, type SubAgentStatus, type TrajectoryDescription, type TrajectoryReads } from './report';
import { WORKFLOW_SERVICE_SUBSET } from './workflow-service-subset.generated';

// CommonJS packages loaded with require: an ES import would run Node's export lexer over them first.
const require = createRequire(import.meta.url);
const grpc = require('@grpc/grpc-js') as typeof Grpc;
const protobuf = require('protobufjs/light') as typeof Protobuf;

const DEFAULT_PORT = 7233;
const RUN_STATUS_PREFIX = 'WORKFLOW_EXECUTION_STATUS_';
const RUN_STATUS_ENUM = 'temporal.api.enums.v1.WorkflowExecutionStatus';
const NORMAL_TASK_QUEUE = 1; // TaskQueueKind.TASK_QUEUE_KIND_NORMAL
const WORKFLOW_TASK_QUEUE = 1; // TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
const CLOSE_EVENT_ONLY = 2; // HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT
const SUB_AGENT_LIMIT = 100;

type Payload = temporal.api.common.v1.IPayload;
type WS = typeof temporal.api.workflowservice.v1;
/** Each method's request and response, as Temporal's generated types declare them (types only: nothing of `@temporalio/proto` loads). */
type Wire = {
  [M in StatusMethod]: { request: Parameters<WS[`${M}Request`]['create']>[0]; response: ReturnType<WS[`${M}Response`]['create']> };
};

export class GrpcTrajectoryReads implements TrajectoryReads {
  private readonly root = protobuf.Root.fromJSON(WORKFLOW_SERVICE_SUBSET);
  private readonly client: Grpc.Client;
  private readonly metadata: Grpc.Metadata;

  constructor(private readonly target: TemporalTarget) {
    const { address, tls: tlsOption, apiKey, metadata } = target.connectionOptions;
    const tls = tlsOption ?? (apiKey !== undefined ? true : undefined);
    const tlsConfig = typeof tls === 'object' && tls !== null ? tls : tls ? {} : null;
    const credentials = tlsConfig
      ? grpc.credentials.createSsl(
          tlsConfig.serverRootCACertificate ? Buffer.from(tlsConfig.serverRootCACertificate) : null,
          tlsConfig.clientCertPair ? Buffer.from(tlsConfig.clientCertPair.key) : null,
          tlsConfig.clientCertPair ? Buffer.from(tlsConfig.clientCertPair.crt) : null,
        )
      : grpc.credentials.createInsecure();
    const nameOverride = tlsConfig?.serverNameOverride;
    this.client = new grpc.Client(
      /:\d+$/.test(address) ? address : `${address}:${DEFAULT_PORT}`,
      credentials,
      nameOverride ? { 'grpc.ssl_target_name_override': nameOverride, 'grpc.default_authority': nameOverride } : {},
    );
    this.metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries(metadata ?? {})) this.metadata.set(k, v);
    if (apiKey) this.metadata.set('Authorization', `Bearer ${apiKey}`);
    this.metadata.set('temporal-namespace', target.namespace);
  }

  close(): void {
    this.client.close();
  }

  private get namespace(): string {
    return this.target.namespace;
  }

  /** One unary call of WorkflowService. */
  private call<M extends StatusMethod>(method: M, request: Wire[M]['request'], deadlineMs: number): Promise<Wire[M]['response']> {
    const service = this.root.lookupService(WORKFLOW_SERVICE);
    const m = service.methods[method]!;
    m.resolve();
    const requestType = m.resolvedRequestType!;
    const responseType = m.resolvedResponseType!;
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        `/${WORKFLOW_SERVICE}/${method}`,
        (value: Wire[M]['request']) => Buffer.from(requestType.encode(requestType.fromObject(value ?? {})).finish()),
        // int64 as numbers (what the types call Long), enums as numbers, bytes as Buffers.
        (bytes: Buffer) => responseType.toObject(responseType.decode(bytes), { longs: Number }) as Wire[M]['response'],
        request,
        this.metadata,
        { deadline: Date.now() + deadlineMs },
        (err, response) => (err ? reject(err) : resolve(response!)),
      );
    });
  }

  async describe(trajectoryId: string, deadlineMs: number): Promise<TrajectoryDescription> {
    const r = await this.call(
      'DescribeWorkflowExecution',
      { namespace: this.namespace, execution: { workflowId: trajectoryId } },
      deadlineMs,
    );
    const info = r.workflowExecutionInfo;
    const attributes = info?.searchAttributes?.indexedFields ?? {};
    const summary = r.executionConfig?.userMetadata?.summary;
    return {
      runStatus: this.runStatusName(info?.status),
      taskQueue: info?.taskQueue ?? '',
      summary: summary ? (decodePayload(summary) as string | null) : null,
      status: searchAttribute<string>(attributes, STATUS_SEARCH_ATTRIBUTES.status) ?? null,
      inDoubt: searchAttribute<number>(attributes, STATUS_SEARCH_ATTRIBUTES.inDoubt) ?? 0,
      pendingApprovals: searchAttribute<number>(attributes, STATUS_SEARCH_ATTRIBUTES.pendingApprovals) ?? 0,
    };
  }

  async pollersLastSeen(taskQueue: string, deadlineMs: number): Promise<number[]> {
    const r = await this.call(
      'DescribeTaskQueue',
      { namespace: this.namespace, taskQueue: { name: taskQueue, kind: NORMAL_TASK_QUEUE }, taskQueueType: WORKFLOW_TASK_QUEUE },
      deadlineMs,
    );
    return (r.pollers ?? []).map((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000);
  }

  async subAgents(trajectoryId: string, deadlineMs: number): Promise<SubAgentStatus[]> {
    const found: SubAgentStatus[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const r = await this.call(
        'ListWorkflowExecutions',
        {
          namespace: this.namespace,
          pageSize: SUB_AGENT_LIMIT,
          query: subAgentsQuery(trajectoryId),
          ...(nextPageToken ? { nextPageToken } : {}),
        },
        deadlineMs,
      );
      for (const w of r.executions ?? []) {
        if (found.length >= SUB_AGENT_LIMIT) break;
        found.push({
          trajectoryId: w.execution?.workflowId ?? '',
          runStatus: this.runStatusName(w.status),
          status: searchAttribute<string>(w.searchAttributes?.indexedFields ?? {}, STATUS_SEARCH_ATTRIBUTES.status) ?? null,
        });
      }
      nextPageToken = r.nextPageToken?.length ? r.nextPageToken : undefined;
    } while (nextPageToken && found.length < SUB_AGENT_LIMIT);
    return found;
  }

  async query<T>(trajectoryId: string, queryName: string, deadlineMs: number): Promise<T> {
    const r = await this.call(
      'QueryWorkflow',
      { namespace: this.namespace, execution: { workflowId: trajectoryId }, query: { queryType: queryName } },
      deadlineMs,
    );
    if (r.queryRejected) throw new Error(`query ${queryName} rejected: the workflow is ${this.runStatusName(r.queryRejected.status)}`);
    return decodePayload(r.queryResult?.payloads?.[0]) as T;
  }

  async result(trajectoryId: string, deadlineMs: number): Promise<TrajectoryResult> {
    const r = await this.call(
      'GetWorkflowExecutionHistory',
      { namespace: this.namespace, execution: { workflowId: trajectoryId }, historyEventFilterType: CLOSE_EVENT_ONLY, skipArchival: true },
      deadlineMs,
    );
    const completed = r.history?.events?.at(-1)?.workflowExecutionCompletedEventAttributes;
    if (!completed) throw new Error(`trajectory ${trajectoryId} has no completion event in its history`);
    return decodePayload(completed.result?.payloads?.[0]) as TrajectoryResult;
  }

  /** `WORKFLOW_EXECUTION_STATUS_COMPLETED` (by its number on the wire) → `COMPLETED`, as Temporal's client names it. */
  private runStatusName(status: number | null | undefined): string {
    const name = this.root.lookupEnum(RUN_STATUS_ENUM).valuesById[status ?? 0] ?? 'WORKFLOW_EXECUTION_STATUS_UNSPECIFIED';
    return name.replace(RUN_STATUS_PREFIX, '');
  }
}

function searchAttribute<T>(fields: Record<string, Payload>, name: string): T | undefined {
  const payload = fields[name];
  if (!payload) return undefined;
  const value = decodePayload(payload);
  // A keyword list or an int arrives as JSON; settle's attributes are single values.
  return (Array.isArray(value) ? value[0] : value) as T;
}

/** A payload as Temporal's default converter wrote it: JSON, or null. */
function decodePayload(payload: Payload | null | undefined): unknown {
  if (!payload) return undefined;
  const encoding = payload.metadata?.encoding ? Buffer.from(payload.metadata.encoding).toString() : '';
  if (encoding === 'binary/null') return null;
  if (encoding === 'json/plain') return JSON.parse(Buffer.from(payload.data ?? new Uint8Array()).toString());
  throw new Error(`a payload in encoding ${JSON.stringify(encoding)}: settle status reads only json/plain (Temporal's default converter)`);
}
