/**
 * `settle mcp serve`: the MCP gateway (docs/mcp.md), in front of an upstream MCP server
 * (`--upstream`) or serving settle's own tools on the operator's workspace (`--workspace`). stdio by default (stdout is the protocol;
 * every log line goes to stderr), streamable HTTP with `--http <port>`. Declared in commands.ts.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { errorMessage, InputError } from '../../core/errors';
import { parseDurationMs } from '../../core/duration';
import { loadWorkerPolicy, WORKSPACE_ROOT_VARIABLE } from '../../activities/worker-policy';
import { defaultRegistry, parseMcpRegistry, type McpRegistry } from '../../core/mcp/registry';
import { UpstreamServer } from '../../activities/mcp/upstream';
import { installRuntime } from '../../workers/runtime';
import { serverEnvironment, splitCommandLine } from '../mcp-tools';
import { databaseUrl } from '../connections';
import { readDevSettings } from '../dev-settings';
import { UsageError } from '../usage-error';
import { printable } from '../terminal-text';
import { gatewayOperatorKeys } from './operator-keys';
import { allowedOrigins, bearerToken, gatewayHosts, refusal, type HttpAccess } from './http-guard';
import { readCapability, startGateway, WORKSPACE_SERVER, type Gateway, type GatewaySource } from './gateway';
import { idleTimeoutMs, IdleSessions } from './idle-sessions';

/** The flags of `settle mcp serve`, as commander parses them (commands.ts). */
export interface ServeOptions {
  upstream?: string;
  registry?: string;
  name?: string;
  trajectory?: string;
  taskQueue?: string;
  capability?: string;
  ungated?: boolean;
  env: string[];
  http?: string;
  tokenFile?: string;
  allowOrigin: string[];
  workspace?: string;
  approvalTimeout?: string;
  lintDetails?: boolean;
  idleTimeout?: string;
}

export async function serve(opts: ServeOptions): Promise<void> {
  // stdout carries the protocol: anything that logs through console.log must not reach it.
  console.log = console.error;
  // Upstream stderr, tool names and lint findings pass through here: escaped, never raw terminal control.
  const log = (line: string) => process.stderr.write(`${printable(line)}\n`);
  if (opts.upstream !== undefined && opts.workspace !== undefined) {
    throw new UsageError("--upstream, --workspace: give one, not both (an upstream MCP server's tools, or settle's own on a workspace)");
  }
  if (opts.upstream === undefined && opts.workspace === undefined) {
    throw new UsageError("--upstream or --workspace: one must be given (the MCP server to serve, or the workspace of settle's own tools)");
  }
  if (!!opts.capability === !!opts.ungated) throw new UsageError('--capability <file> or --ungated: exactly one must be given');
  const access = opts.http !== undefined ? httpAccess(opts) : null;
  if (!access && (opts.tokenFile !== undefined || opts.allowOrigin.length > 0)) {
    throw new UsageError(`${opts.tokenFile !== undefined ? '--token-file' : '--allow-origin'}: only with --http`);
  }
  const approvalTimeoutMs = opts.approvalTimeout === undefined ? undefined : approvalTimeout(opts.approvalTimeout);
  const idleMs = idleTimeoutMs(opts.idleTimeout, opts.http !== undefined);
  const source = opts.workspace !== undefined ? workspaceSource(opts, opts.workspace) : upstreamSource(opts, opts.upstream!, log);
  const server = source.kind === 'upstream' ? source.registry.server : WORKSPACE_SERVER;
  const capability = opts.capability ? readCapability(opts.capability) : null;
  if (capability && opts.trajectory !== undefined && opts.trajectory !== capability.body.aud) {
    throw new UsageError(`--trajectory: must be the capability's audience (${capability.body.aud}) when both are given`);
  }
  const trajectoryId = opts.trajectory ?? capability?.body.aud ?? `mcp-${server}-${randomUUID()}`;
  const dev = process.env.TEMPORAL_ADDRESS ? null : readDevSettings();
  const temporalAddress = process.env.TEMPORAL_ADDRESS || dev?.temporalAddress;
  if (!temporalAddress) throw new UsageError('TEMPORAL_ADDRESS: must be set (or run `settle dev`, whose settings the CLI then finds)');
  // The gateway stops on SIGTERM/SIGINT itself, both transports: it closes the session while its worker still runs.
  installRuntime('WARN', { shutdownSignals: [] });
  const gateway = await startGateway({
    source,
    trajectoryId,
    ...(opts.taskQueue !== undefined ? { taskQueue: opts.taskQueue } : {}),
    temporalAddress,
    namespace: process.env.TEMPORAL_NAMESPACE || dev?.namespace || 'default',
    databaseUrl: databaseUrl("the gateway keeps its calls' endpoint records there"),
    capability,
    operatorKeys: gatewayOperatorKeys(),
    lintDetails: opts.lintDetails === true,
    ...(approvalTimeoutMs !== undefined ? { approvalTimeoutMs } : {}),
    log,
  });
  if (opts.http !== undefined && access) await serveHttp(gateway, port(opts.http), access, idleMs, log);
  else await serveStdio(gateway);
}

function upstreamSource(opts: ServeOptions, commandLine: string, log: (line: string) => void): GatewaySource {
  const registry = loadRegistry(opts);
  const [command, ...args] = splitCommandLine(commandLine);
  if (command === undefined) throw new UsageError('--upstream: must be a command line that starts an MCP server');
  const upstream = new UpstreamServer({
    command,
    args,
    env: serverEnvironment(opts.env),
    startTimeoutMs: 30_000,
    callTimeoutMs: 10 * 60_000,
    log,
  });
  return { kind: 'upstream', upstream, registry };
}

/**
 * The operator's directory, as the worker will hold it: its real path, and a policy whose
 * workspace root is its parent (the directory lies strictly inside, with nothing between; the
 * worker refuses any other workspace). The rest of the policy is the environment's.
 */
function workspaceSource(opts: ServeOptions, dir: string): GatewaySource {
  for (const flag of ['registry', 'name'] as const) {
    if (opts[flag] !== undefined) throw new UsageError(`--${flag}: only with --upstream (--workspace serves settle's own tools)`);
  }
  if (opts.env.length > 0) throw new UsageError('--env: only with --upstream (--workspace starts no server)');
  if (opts.lintDetails) throw new UsageError("--lint-details: only with --upstream (settle's own tools are linted with settle)");
  let real: string;
  try {
    real = fs.realpathSync(path.resolve(dir));
  } catch (err) {
    throw new UsageError(`--workspace: must name an existing directory (${errorMessage(err)})`);
  }
  if (!fs.statSync(real).isDirectory()) throw new UsageError(`--workspace: must name a directory (${real} is not one)`);
  const root = path.dirname(real);
  if (root === '/' || real === '/') {
    throw new UsageError(
      `--workspace: must lie below a top-level directory (its parent becomes the worker's workspace root, never /; got ${real})`,
    );
  }
  return { kind: 'workspace', dir: real, policy: loadWorkerPolicy({ ...process.env, [WORKSPACE_ROOT_VARIABLE]: root }) };
}

/** How long an A3 call waits for `settle approve`: 1 s to 30 days, as a trajectory's approvalTimeoutMs. */
function approvalTimeout(text: string): number {
  let ms: number;
  try {
    ms = parseDurationMs(text, '--approval-timeout');
  } catch (err) {
    throw new UsageError(`--approval-timeout: must ${(err as InputError).rule}`);
  }
  if (ms > MAX_APPROVAL_TIMEOUT_MS) throw new UsageError(`--approval-timeout: must be at most 30d (got ${text})`);
  return ms;
}

const MAX_APPROVAL_TIMEOUT_MS = 30 * 24 * 3600_000;

function loadRegistry(opts: ServeOptions): McpRegistry {
  if (opts.registry === undefined) {
    if (opts.name === undefined) throw new UsageError('--name or --registry: one must name the upstream server');
    return defaultRegistry(opts.name);
  }
  if (opts.name !== undefined) throw new UsageError('--name: must not be given with --registry (the registry names the server)');
  let text: string;
  try {
    text = fs.readFileSync(opts.registry, 'utf8');
  } catch (err) {
    throw new InputError('--registry', `name a readable file (${(err as Error).message})`);
  }
  return parseMcpRegistry(text, '--registry');
}

function port(text: string): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) throw new UsageError(`--http: must be a port from 0 to 65535 (got ${text})`);
  return Number(text);
}

/** The HTTP gateway's token and allowed origins; a generated token is told to the operator once, on stderr. */
function httpAccess(opts: ServeOptions): HttpAccess & { generated: boolean } {
  return { ...bearerToken(opts.tokenFile), origins: allowedOrigins(opts.allowOrigin) };
}

/**
 * One session on stdin/stdout; it ends when the client closes the pipe (stdin's end: the SDK's
 * transport does not watch for it) or the gateway is told to stop, and the process exits with it.
 */
async function serveStdio(gateway: Gateway): Promise<void> {
  const server = gateway.server();
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
    for (const ended of ['end', 'close'] as const) process.stdin.once(ended, resolve);
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.connect(new StdioServerTransport());
  await closed;
  await gateway.close();
  // Whatever is left (a pool, a timer) must not keep a gateway without a client alive.
  process.exit(0);
}

/**
 * Streamable HTTP on 127.0.0.1: one MCP session per `mcp-session-id`, all in the gateway's
 * trajectory; every request first passes http-guard.ts (Host, Origin, bearer token); a session no
 * request touched for `idleMs` ends.
 */
async function serveHttp(
  gateway: Gateway,
  listenPort: number,
  access: HttpAccess & { generated: boolean },
  idleMs: number,
  log: (line: string) => void,
): Promise<void> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let hosts = gatewayHosts(listenPort);
  const idle = new IdleSessions(idleMs, (id) => {
    log(`settle mcp: HTTP session ${id} ended: idle for ${idleMs / 1000} s`);
    void transports.get(id)?.close();
  });
  const httpServer = http.createServer((req, res) => {
    void (async () => {
      const refused = refusal(req.headers, access, hosts);
      if (refused) {
        log(`settle mcp: refused an HTTP request (${refused.status}): ${refused.reason}`);
        const challenge = refused.status === 401 ? { 'www-authenticate': 'Bearer realm="settle-mcp"' } : {};
        res.writeHead(refused.status, { 'content-type': 'text/plain; charset=utf-8', ...challenge }).end(`${refused.reason}\n`);
        return;
      }
      if (!req.url?.startsWith('/mcp')) {
        res.writeHead(404).end();
        return;
      }
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
      if (!transport) {
        if (sessionId !== undefined) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unknown session' }));
          return;
        }
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void transports.set(id, created),
        });
        created.onclose = () => {
          if (created.sessionId) {
            transports.delete(created.sessionId);
            idle.forget(created.sessionId);
          }
        };
        await gateway.server().connect(created);
        transport = created;
      }
      const session = transport;
      // The session's id exists once its initialize request is handled: the clock counts from its response's end.
      if (session.sessionId) idle.begin(session.sessionId);
      res.once('close', () => {
        if (session.sessionId && transports.has(session.sessionId)) idle.end(session.sessionId);
      });
      await transport.handleRequest(req, res);
    })().catch((err: unknown) => {
      log(`settle mcp: HTTP request failed: ${(err as Error).message}`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(listenPort, '127.0.0.1', resolve));
  const address = httpServer.address();
  const boundPort = typeof address === 'object' && address ? address.port : listenPort;
  hosts = gatewayHosts(boundPort);
  if (access.generated) log(`settle mcp: bearer token for this start (clients send Authorization: Bearer <token>): ${access.token}`);
  log(`settle mcp: streamable HTTP on http://127.0.0.1:${boundPort}/mcp`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  httpServer.close();
  httpServer.closeAllConnections(); // a client's open event stream must not hold the stop
  await gateway.close();
  // Stopped: a socket some library left open (seen: one to Postgres) must not keep the process running.
  process.exit(0);
}
