/**
 * `settle mcp serve` (docs/mcp.md). With `--upstream "<command>"`: an MCP server in front of one
 * upstream MCP server. It lists the upstream's tools unchanged (their lint findings go to the
 * log), and runs every tools/call under the operator's registry and the session's capability: A0
 * forwarded, A1/A2 as a settled call in the session's trajectory workflow (run by this process's
 * own worker, whose tools call the upstream); an A3 call waits there for `settle approve` (or is
 * denied). With `--workspace DIR`: settle's own built-ins, every call (A0 too) a settled call
 * whose worker runs it in DIR and checks the session's capability at every access.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { deriveKey } from '../../core/key';
import { errorMessage, InputError } from '../../core/errors';
import { CapabilityToken } from '../../core/capability/token';
import type { McpRegistry } from '../../core/mcp/registry';
import { authorize } from '../../activities/capability/authorize';
import { loadKeyRing, type KeyRing } from '../../activities/capability/keyring';
import { gatewayTools, type GatewayTool } from '../../activities/mcp/gateway-tools';
import type { UpstreamServer, UpstreamTool } from '../../activities/mcp/upstream';
import { workspaceTools, type WorkspaceTool } from '../../activities/mcp/workspace-tools';
import type { WorkerPolicy } from '../../activities/worker-policy';
import type { Observation } from '../../core/observation';
import type { SideEffectLevel } from '../../core/tools/catalog';
import type { AnyTeamTool } from '../../activities/tools/team-tool';
import type { SettledResult } from '../../workflows/team-calls';
import type { McpCallInput } from '../../workflows/mcp-definitions';
import { SettlePlugin } from '../../workers/settle-plugin';
import { PRELOAD_MODULES, prebuiltWorkflowBundle, WORKFLOWS_PATH } from '../../workers/workflow-bundle';
import { SessionWorkflow } from './session-workflow';
import { lintUpstream } from './upstream-lint';
import { refuseOperatorTools } from './operator-keys';
import type { OperatorKeys } from '../../activities/operator/operator-keys';
import { assertSessionOn, gatewayWorkerIdentity, sessionTaskQueue, UPSTREAM_MEMO, upstreamIdentity } from './session-queue';
import { lockSession } from './session-lock';

/** The `_meta` member a client names its call with: the same id (and arguments) is the same call, run once. */
export const CALL_ID_META = 'io.settle/call_id';

/** What a gateway serves: an upstream MCP server's tools, or settle's own on the operator's workspace. */
export type GatewaySource =
  | { kind: 'upstream'; upstream: UpstreamServer; registry: McpRegistry }
  /** `dir`: the workspace's real path; `policy`: the worker's, its workspace root holding `dir`. */
  | { kind: 'workspace'; dir: string; policy: WorkerPolicy };

/** The server name a `--workspace` gateway goes by (its default task queue, its trajectory ids). */
export const WORKSPACE_SERVER = 'settle';

export interface GatewayOptions {
  source: GatewaySource;
  /** The session's trajectory (workflow id). */
  trajectoryId: string;
  /** `--task-queue`; default: the running session's queue, else one of the session's own (session-queue.ts). */
  taskQueue?: string;
  temporalAddress: string;
  namespace: string;
  databaseUrl: string;
  /** The session's capability (checked for every call), or null when the operator serves ungated. */
  capability: CapabilityToken | null;
  /** What the worker verifies operator credentials with (operator-keys.ts); null: none, and tools needing an operator are not served. */
  operatorKeys: OperatorKeys | null;
  /** Every lint finding on the upstream's tools in the log, not one summary line (`--lint-details`). */
  lintDetails?: boolean;
  /** How long an A3 call waits for `settle approve` before it is denied (default: settled()'s, one hour). */
  approvalTimeoutMs?: number;
  /** A pre-built bundle of settle's workflows; default: SETTLE_WORKFLOW_BUNDLE, else the package's own, else bundled at start. */
  workflowBundlePath?: string;
  log: (line: string) => void;
}

export interface Gateway {
  /** A new MCP server for one session (stdio: one; HTTP: one per session). */
  server(): McpServer;
  /** Ends the session's workflow once its calls finished, stops the worker and the upstream. */
  close(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { source } = options;
  const connection = await Connection.connect({ address: options.temporalAddress });
  const client = new Client({ connection, namespace: options.namespace });
  const cleanup: (() => Promise<void>)[] = [() => connection.close()];
  try {
    return await startServing(options, client, cleanup);
  } catch (err) {
    if (source.kind === 'upstream') await source.upstream.close();
    for (const step of cleanup.reverse()) await step().catch(() => {});
    throw err;
  }
}

async function startServing(options: GatewayOptions, client: Client, cleanup: (() => Promise<void>)[]): Promise<Gateway> {
  const { source, log } = options;
  const server = source.kind === 'upstream' ? source.registry.server : WORKSPACE_SERVER;
  const upstream = upstreamIdentity(source.kind === 'upstream' ? source.upstream.commandLine : ['--workspace', source.dir]);
  // Before the upstream starts: a gateway refused here never touches it.
  const taskQueue = await sessionTaskQueue(client, { trajectoryId: options.trajectoryId, server, upstream, requested: options.taskQueue });
  const lock = await lockSession(options.databaseUrl, taskQueue, options.trajectoryId);
  cleanup.push(() => lock.release());
  const served =
    source.kind === 'upstream'
      ? await upstreamCatalog(source, options.operatorKeys !== null, options, log)
      : workspaceCatalog(options.capability !== null, log);
  const ring = options.capability ? loadKeyRing() : null;

  const workflowBundle = options.workflowBundlePath ? { codePath: options.workflowBundlePath } : prebuiltWorkflowBundle();
  const nativeConnection = await NativeConnection.connect({ address: options.temporalAddress });
  cleanup.push(() => nativeConnection.close());
  const worker = await Worker.create({
    plugins: [
      new SettlePlugin({
        tools: served.definitions,
        databaseUrl: options.databaseUrl,
        operatorKeys: options.operatorKeys,
        warn: log,
        // stdout may be the MCP channel itself: no JSON log lines there.
        log: false,
        ...(source.kind === 'workspace' ? { workspace: source.dir, policy: source.policy } : {}),
      }),
    ],
    connection: nativeConnection,
    namespace: options.namespace,
    taskQueue,
    // `<pid>@<host>`: how a gateway started after this one was SIGKILLed tells its stale pollers apart.
    identity: gatewayWorkerIdentity(),
    // Pre-built (SETTLE_WORKFLOW_BUNDLE, else the package's own) when there is one: a gateway starts in seconds.
    ...(workflowBundle ? { workflowBundle } : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { preloadModules: [...PRELOAD_MODULES] } }),
  });
  const running = worker.run();
  running.catch((err: unknown) => log(`settle mcp: the worker stopped: ${errorMessage(err)}`));
  cleanup.push(async () => {
    worker.shutdown();
    await running.catch(() => {});
  });

  // One workflow per trajectory: a gateway started again with the same trajectory joins it, or starts its next run.
  const session = await SessionWorkflow.open(client, {
    trajectoryId: options.trajectoryId,
    taskQueue,
    server: served.server,
    memo: { [UPSTREAM_MEMO]: upstream },
  });
  await assertSessionOn(client, options.trajectoryId, taskQueue);
  log(
    `settle mcp: serving ${served.listed.length} tool(s) of ${served.server} in trajectory ${options.trajectoryId} on task queue ${taskQueue}`,
  );

  // Call ids the gateway makes up for calls that bring none: unique to this process, so a restarted
  // gateway never mistakes a new call for an old one (and never deduplicates a retry: see docs/mcp.md).
  const processId = randomUUID().slice(0, 8);
  let counter = 0;
  const ctx: CallContext = { ...options, served, session, ring, nextCallId: () => `auto-${processId}-${++counter}` };

  return {
    server() {
      const mcp = new McpServer({ name: `settle-mcp-${served.server}`, version: '0.1.0' }, { capabilities: { tools: {} } });
      // The protocol-level handlers: McpServer's own tools/list would publish zod schemas of its own;
      // the gateway lists the upstream's tools as the upstream wrote them, or the catalog's schemas.
      mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: served.listed }));
      mcp.server.setRequestHandler(CallToolRequestSchema, async (request) =>
        callTool(ctx, request.params.name, request.params.arguments ?? {}, request.params._meta?.[CALL_ID_META]),
      );
      return mcp;
    },
    async close() {
      await withinMs(CLOSE_STEP_MS, session.close());
      if (worker.getState() === 'RUNNING') worker.shutdown();
      // A call still in flight holds the worker until the upstream answers: stopping the upstream
      // ends it (IN_DOUBT, for the session's next gateway), so the gateway never outlives its session.
      await withinMs(CLOSE_STEP_MS, running);
      if (source.kind === 'upstream') await source.upstream.close();
      await withinMs(CLOSE_STEP_MS, running);
      await withinMs(CLOSE_STEP_MS, client.connection.close());
      await withinMs(CLOSE_STEP_MS, nativeConnection.close());
      await withinMs(CLOSE_STEP_MS, lock.release());
    },
  };
}

/** How long each step of closing may take: a session's end must not wait on a stuck peer. */
const CLOSE_STEP_MS = 3_000;

/** Waits for `promise` (its failure ignored), at most `ms`. */
async function withinMs(ms: number, promise: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** What one gateway serves: the tools it lists, the definitions its worker registers, and how each call is routed. */
interface Served {
  server: string;
  listed: readonly (UpstreamTool | Tool)[];
  definitions: AnyTeamTool[];
  /** By tool name: an upstream's tool, or a built-in on the workspace. */
  tools: Map<string, { kind: 'upstream'; tool: GatewayTool } | { kind: 'workspace'; tool: WorkspaceTool }>;
}

async function upstreamCatalog(
  source: Extract<GatewaySource, { kind: 'upstream' }>,
  operatorKeys: boolean,
  options: Pick<GatewayOptions, 'lintDetails'>,
  log: (line: string) => void,
): Promise<Served> {
  const { upstream, registry } = source;
  const offered = await upstream.listTools();
  lintUpstream(offered, registry.server, options.lintDetails === true, log);
  const { definitions, tools } = gatewayTools(upstream, offered, registry);
  if (!operatorKeys) refuseOperatorTools(tools);
  for (const t of tools.values()) if (!t.served) log(`settle mcp: ${t.name} is not served: ${t.reason}`);
  // The client is offered only what it can call: a refused tool is never listed.
  const listed = offered.filter((t) => typeof t.name === 'string' && tools.get(t.name)?.served === true);
  return {
    server: registry.server,
    listed,
    definitions,
    tools: new Map([...tools].map(([name, tool]) => [name, { kind: 'upstream', tool }])),
  };
}

/** The built-ins need no definitions of the gateway's: every worker registers them. */
function workspaceCatalog(capability: boolean, log: (line: string) => void): Served {
  const { tools, skipped } = workspaceTools({ capability });
  for (const s of skipped) log(`settle mcp: ${s.name} is not served: ${s.reason}`);
  return {
    server: WORKSPACE_SERVER,
    listed: [...tools.values()].map((t) => t.listed),
    definitions: [],
    tools: new Map([...tools].map(([name, tool]) => [name, { kind: 'workspace', tool }])),
  };
}

interface CallContext extends GatewayOptions {
  served: Served;
  session: SessionWorkflow;
  ring: KeyRing | null;
  nextCallId: () => string;
}

async function callTool(ctx: CallContext, name: string, args: Record<string, unknown>, clientCallId: unknown): Promise<CallToolResult> {
  const entry = ctx.served.tools.get(name);
  if (!entry) return toolError(`settle: ${name} is not a tool of ${ctx.served.server}`);
  if (entry.kind === 'workspace') {
    // The worker checks the capability at every access (paths, rights), as a trajectory's; the
    // answer is the tool's observation.
    return settledCall(ctx, name, args, clientCallId, entry.tool.level, { capability: ctx.capability ?? undefined }, resultOfObservation);
  }
  const tool = entry.tool;
  const { source } = ctx;
  if (source.kind !== 'upstream') throw new Error('an upstream tool on a workspace gateway');
  if (!tool.served) return toolError(`settle: ${name} cannot be called through settle: ${tool.reason}`);
  const denied = await capabilityDenial(ctx, source.registry.server, tool.name, tool.level === 'A0' ? 'read' : 'write');
  if (denied)
    return toolError(`settle: refused: the session's capability does not grant mcp:${source.registry.server}/${name} (${denied})`);
  if (tool.level === 'A0') {
    // Read-only by the operator's word: forwarded, and a failure is only a failed read.
    try {
      return (await source.upstream.callTool(name, args, {})) as CallToolResult;
    } catch (err) {
      return toolError(`settle: ${source.registry.server} did not answer ${name}: ${errorMessage(err)}`);
    }
  }
  // The upstream's CallToolResult as the upstream wrote it.
  return settledCall(ctx, name, args, clientCallId, tool.level, { capability: ctx.capability ?? undefined }, (settled) =>
    settled.state === 'COMPLETED'
      ? ((settled.result ?? { content: [{ type: 'text', text: settled.observation.output }] }) as CallToolResult)
      : null,
  );
}

/**
 * One call as an update of the session's workflow, whose handler calls settled(). `answer` turns
 * a completed call into the client's result (null: it did not complete, a tool error).
 */
async function settledCall(
  ctx: CallContext,
  name: string,
  args: Record<string, unknown>,
  clientCallId: unknown,
  level: SideEffectLevel,
  call: Pick<McpCallInput, 'capability'>,
  answer: (settled: SettledResult<unknown>) => CallToolResult | null,
): Promise<CallToolResult> {
  if (clientCallId !== undefined && (typeof clientCallId !== 'string' || clientCallId.length === 0 || clientCallId.length > 255)) {
    return toolError(`settle: _meta["${CALL_ID_META}"] must be a text of 1 to 255 characters`);
  }
  const callId = clientCallId ?? ctx.nextCallId();
  let updateId: string;
  try {
    // The same logical call is the same update: Temporal runs it once and answers every repeat with its result.
    updateId = deriveKey({ trajectoryId: ctx.trajectoryId, turn: 0, callId, tool: name, args });
  } catch (err) {
    return toolError(`settle: ${err instanceof InputError ? err.message : errorMessage(err)}`);
  }
  // An A3 call waits in the session's workflow for `settle approve` (its key is the update id); the MCP call stays pending.
  if (level === 'A3') ctx.log(`settle mcp: ${name} (A3) waits for an operator: settle approve ${ctx.trajectoryId} ${updateId}`);
  const input: McpCallInput = {
    tool: name,
    args,
    callId,
    turn: 0,
    ...(call.capability !== undefined ? { capability: call.capability } : {}),
    ...(ctx.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: ctx.approvalTimeoutMs } : {}),
  };
  try {
    const settled = await ctx.session.call(input, updateId);
    const meta = { 'io.settle/key': settled.key, 'io.settle/resolution': settled.resolution, 'io.settle/state': settled.state };
    const result = answer(settled);
    if (!result) {
      return { ...toolError(`settle: ${name} did not complete (${settled.resolution}): ${settled.observation.error ?? ''}`), _meta: meta };
    }
    return { ...result, _meta: { ...(result._meta ?? {}), ...meta } };
  } catch (err) {
    const cause = err instanceof WorkflowUpdateFailedError && err.cause ? err.cause.message : errorMessage(err);
    return toolError(`settle: ${name} was refused: ${cause}`);
  }
}

/** A built-in's answer: its observation's text; a tool error when it failed (a refused path, no match). */
function resultOfObservation(settled: SettledResult<unknown>): CallToolResult | null {
  if (settled.state !== 'COMPLETED' && settled.resolution !== 'read') return null;
  const o: Observation = settled.observation;
  const failed = o.error !== null || o.exit_status !== 0;
  const text = [o.output, o.error ?? ''].filter(Boolean).join('\n');
  return { content: [{ type: 'text', text }], ...(failed ? { isError: true } : {}) };
}

/** Why the session's capability does not allow this call, or null (also when the operator serves ungated). */
async function capabilityDenial(ctx: CallContext, server: string, tool: string, op: 'read' | 'write'): Promise<string | null> {
  if (!ctx.capability || !ctx.ring) return null;
  const { verdict } = await authorize(
    ctx.capability,
    {
      op,
      target: { kind: 'mcp', server, tool },
      cost: 1,
      audience: ctx.trajectoryId,
      nowMs: Date.now(),
      key: 'mcp-gateway',
    },
    { ring: ctx.ring, budgets: null },
  );
  return verdict.allowed ? null : `${verdict.component}: ${verdict.reason}`;
}

function toolError(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** Reads a capability token file (JSON); throws InputError naming the flag. */
export function readCapability(file: string): CapabilityToken {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new InputError('--capability', `name a readable JSON token file (${errorMessage(err)})`);
  }
  const parsed = CapabilityToken().safeParse(json);
  if (!parsed.success) throw new InputError('--capability', `be a capability token (${parsed.error.issues[0]?.message ?? 'invalid'})`);
  return parsed.data;
}
