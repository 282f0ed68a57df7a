/**
 * A real Temporal server for the demo, the tests and `settle dev`: `temporal server start-dev`
 * (server + Web UI in one process) on free loopback ports, with settle's search attributes
 * registered at start.
 *
 * Neither HTTP face answers a foreign Host (a DNS name rebound to loopback): the HTTP API through
 * the server's own `frontend.httpAllowedHosts`, the Web UI through a checking proxy on its public
 * port (host-check-proxy.ts), the UI itself on a hidden loopback address behind it.
 *
 * The CLI binary is found in this order: $TEMPORAL_CLI, `temporal` on PATH, the cached
 * `.settle/bin/temporal` of the project's state directory (stack/paths.ts), a fresh
 * `go install …/cli/cmd/temporal@v1.5.1` into it when Go is present, else the binary that
 * @temporalio/testing downloads.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { reapOnExit } from './reaper';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../core/search-attributes';
import { BIN_DIR } from './paths';
import { freePorts, isListening } from './ports';
import { startHostCheckProxy, type HostCheckProxy } from './host-check-proxy';

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export interface TemporalHandle {
  address: string;
  namespace: string;
  /** Web UI base URL (null only if the UI could not be enabled). */
  uiUrl: string | null;
  /** How the binary was obtained, for the log. */
  source: string;
  /** The server's process id (null when @temporalio/testing runs it). */
  pid: number | null;
  /** The dynamic config values the server was started with. */
  dynamicConfig: Readonly<Record<string, unknown>>;
  stop(): Promise<void>;
}

export interface StartTemporalOptions {
  /** SQLite file for persistence across restarts; in-memory when absent. */
  dbFile?: string;
  /** Preferred gRPC port; if it is in use, another free port is used (and logged). */
  port?: number;
  log?: (line: string) => void;
  /** Where to look for / build the cached binary (default `.settle/bin`). */
  binDir?: string;
  /** Environment for the CLI lookup (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Let @temporalio/testing download a CLI as the last resort (default true). */
  allowDownload?: boolean;
  /**
   * Dynamic config values (default LOW_LATENCY_DYNAMIC_CONFIG); the bench passes `{}` to measure
   * the stock server.
   */
  dynamicConfig?: Readonly<Record<string, unknown>>;
}

/**
 * Dynamic config for prompt dispatch on the one-node dev server (passed as
 * `--dynamic-config-value KEY=JSON`). The dev server has one history shard, and each of its task
 * queues reads at most `MaxPollRPS` batches per second: at the default 20/s every hand-off
 * (workflow task → activity task → workflow task) waits up to 50 ms for the rate limiter, so a
 * 10-call trajectory took ~1 s whatever the workflow did, and settle vs plain Temporal read 1.00×.
 *
 * - transfer queue: dispatches workflow and activity tasks to matching — the latency lever;
 * - timer queue: fires timers and timeouts (backoff sleeps, heartbeat and start-to-close
 *   timeouts); under load thousands are due at once;
 * - visibility queue: applies search-attribute upserts, so `settle status`/`records` and the
 *   Web UI's filters see them promptly;
 * - outbound queue: Nexus and callbacks (unused by settle, raised for parity);
 * - one task-queue partition instead of 4: on one node, a task written to a partition without a
 *   waiting poller is forwarded to the root partition, an extra hop for nothing.
 *
 * Values are JSON (numbers here). Measured by `npm run bench` (bench/README in the README's Measured).
 */
export const LOW_LATENCY_DYNAMIC_CONFIG: Readonly<Record<string, number>> = {
  'history.transferProcessorMaxPollRPS': 1000,
  'history.timerProcessorMaxPollRPS': 1000,
  'history.visibilityProcessorMaxPollRPS': 1000,
  'history.outboundProcessorMaxPollRPS': 1000,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
};

function dynamicConfigArgs(values: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(values).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]);
}

/** The Host values a browser on this machine sends to a loopback port: any other is a rebound name. */
function loopbackHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`];
}

/**
 * Where the Web UI itself listens, behind its proxy: a random address in 127.0.0.0/8 (all of it
 * is loopback on Linux), so a rebinding page would have to guess 24 bits of address as well as the
 * port to reach the UI around the proxy. Elsewhere only 127.0.0.1 is configured: the port alone hides it.
 */
function hiddenLoopbackAddress(): string {
  if (process.platform !== 'linux') return '127.0.0.1';
  const [a, b, c] = crypto.randomBytes(3);
  return `127.${a}.${b}.${Math.max(2, c!)}`;
}

/** Whether the Web UI (its hidden address) answers below 500 within `ms`; never throws. */
async function untilUiServes(ui: { host: string; port: number }, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const status = await fetch(`http://${ui.host}:${ui.port}/`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status,
      () => 0,
    );
    if (status > 0 && status < 500) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** The UI's public port: the proxy that admits only loopback Hosts, forwarding to the hidden UI. */
async function webUiProxy(publicPort: number, ui: { host: string; port: number }): Promise<HostCheckProxy> {
  return startHostCheckProxy({ listen: { host: '127.0.0.1', port: publicPort }, target: ui, hosts: loopbackHosts(publicPort) });
}

export class TemporalCliNotFound extends Error {
  override readonly name = 'TemporalCliNotFound';
}

type CliLocation = { kind: 'binary'; path: string; source: string } | { kind: 'download' };

/** Locates (or builds) the Temporal CLI. Throws TemporalCliNotFound with what to do. */
export function findTemporalCli(
  log: (line: string) => void = () => {},
  { binDir = BIN_DIR, env = process.env }: { binDir?: string; env?: NodeJS.ProcessEnv } = {},
): CliLocation {
  const fromEnv = env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) {
      throw new TemporalCliNotFound(`TEMPORAL_CLI=${fromEnv} is not an executable file`);
    }
    return { kind: 'binary', path: fromEnv, source: 'TEMPORAL_CLI' };
  }
  const onPath = whichSync('temporal', env);
  if (onPath) return { kind: 'binary', path: onPath, source: 'PATH' };

  const cached = path.join(binDir, 'temporal');
  if (isExecutable(cached)) return { kind: 'binary', path: cached, source: `cached ${binDir}` };

  const go = whichSync('go', env);
  if (go) {
    log(`temporal: building the Temporal CLI (go install ${TEMPORAL_CLI_MODULE}); the first build takes a few minutes…`);
    fs.mkdirSync(binDir, { recursive: true });
    const built = spawnSync(go, ['install', TEMPORAL_CLI_MODULE], {
      env: { ...env, GOBIN: binDir, CGO_ENABLED: env.CGO_ENABLED ?? '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (built.status === 0 && isExecutable(cached)) {
      return { kind: 'binary', path: cached, source: 'built with go install' };
    }
    log(`temporal: go install failed (exit ${built.status}); trying the @temporalio/testing download`);
  }
  return { kind: 'download' };
}

export async function startTemporal(options: StartTemporalOptions = {}): Promise<TemporalHandle> {
  const log = options.log ?? (() => {});
  const cli = findTemporalCli(log, {
    ...(options.binDir ? { binDir: options.binDir } : {}),
    ...(options.env ? { env: options.env } : {}),
  });
  if (cli.kind === 'download') {
    if (options.allowDownload === false) throw new TemporalCliNotFound(notFoundMessage('downloads are disabled'));
    return startViaTestingDownload(options, log);
  }

  // A port can be taken between choosing and binding it: try again with new ports.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startDevServer(cli.path, cli.source, options, log);
    } catch (err) {
      lastError = err;
      if (!/address already in use|bind/i.test(String((err as Error).message))) throw err;
      log(`temporal: port in use, retrying with other ports`);
    }
  }
  throw lastError;
}

async function startDevServer(
  binary: string,
  source: string,
  options: StartTemporalOptions,
  log: (line: string) => void,
): Promise<TemporalHandle> {
  const [freeGrpc, uiPort, uiBackendPort, httpPort, metricsPort] = (await freePorts(5)) as [number, number, number, number, number];
  const uiBackend = { host: hiddenLoopbackAddress(), port: uiBackendPort };
  let port = freeGrpc;
  if (options.port !== undefined) {
    if (await isListening(options.port)) log(`temporal: port ${options.port} is in use; using ${freeGrpc} instead`);
    else port = options.port;
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--ui-ip',
    uiBackend.host,
    '--ui-port',
    String(uiBackend.port),
    '--http-port',
    String(httpPort),
    '--metrics-port',
    String(metricsPort),
    '--namespace',
    'default',
    '--log-level',
    'error',
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
    ...dynamicConfigArgs(options.dynamicConfig ?? LOW_LATENCY_DYNAMIC_CONFIG),
    // Not among the dynamic config above: the bench's stock server ({}) keeps it too.
    ...dynamicConfigArgs({ 'frontend.httpAllowedHosts': loopbackHosts(httpPort) }),
    ...(options.dbFile ? ['--db-filename', options.dbFile] : []),
  ];
  if (options.dbFile) ownerOnlyDatabase(options.dbFile);

  // Own process group, so stop() ends the server and anything it started.
  // Under umask 077, so the files the server creates (its history database) are owner-only. The
  // spawn is synchronous: nothing else in this process creates files while the umask is narrowed.
  const umask = process.umask(0o077);
  let child;
  try {
    child = spawn(binary, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } finally {
    process.umask(umask);
  }
  let output = '';
  const collect = (b: Buffer) => {
    output = (output + b.toString()).slice(-8000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Whatever ends this process (a signal to its group, SIGKILL), the server goes too (reaper.ts).
  void exited.then(reapOnExit({ group: child.pid!, signal: 'SIGTERM' }));
  // If this process ends without calling stop() (an uncaught error, process.exit), take the
  // server down at once rather than leave it listening until the reaper acts.
  const killOnExit = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  process.once('exit', killOnExit);
  void exited.then(() => process.removeListener('exit', killOnExit));

  const address = `127.0.0.1:${port}`;
  const ready = await waitUntilServing(address, exited, 60_000);
  if (ready !== 'serving') {
    await killGroup(child, exited);
    throw new Error(`temporal server start-dev did not come up (${ready}): ${output.trim().split('\n').slice(-5).join(' | ')}`);
  }
  let proxy: HostCheckProxy;
  try {
    proxy = await webUiProxy(uiPort, uiBackend);
  } catch (err) {
    await killGroup(child, exited);
    throw err;
  }
  // The UI answers 503 for a moment after its port opens: hand out its address once it serves.
  const uiServing = await untilUiServes(uiBackend, 15_000);
  log(`temporal: ${binary} (${source}) serving ${address}, Web UI http://127.0.0.1:${uiPort}${uiServing ? '' : ' (not answering yet)'}`);
  return {
    address,
    namespace: 'default',
    uiUrl: `http://127.0.0.1:${uiPort}`,
    source,
    pid: child.pid ?? null,
    dynamicConfig: options.dynamicConfig ?? LOW_LATENCY_DYNAMIC_CONFIG,
    stop: () => proxy.close().then(() => killGroup(child, exited)),
  };
}

/**
 * The dev server's history file holds every workflow's inputs and results: owner-only (0600).
 * Files an older version left world-readable are narrowed here; new ones are created under the
 * umask 077 the server is started with.
 */
export function ownerOnlyDatabase(dbFile: string): void {
  fs.mkdirSync(path.dirname(dbFile), { recursive: true });
  for (const f of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-journal`]) {
    if (fs.existsSync(f)) fs.chmodSync(f, 0o600);
  }
}

async function waitUntilServing(address: string, exited: Promise<number | null>, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void exited.then((c) => (exitCode = c));
  while (Date.now() < deadline) {
    if (exitCode !== undefined) return `exited with code ${exitCode}`;
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace: 'default' });
        return 'serving';
      } finally {
        await connection.close();
      }
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return `not serving after ${timeoutMs} ms`;
}

async function killGroup(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      /* already gone */
    }
  };
  signal('SIGTERM');
  const timedOut = await Promise.race([exited.then(() => false), sleep(10_000).then(() => true)]);
  if (timedOut) {
    signal('SIGKILL');
    await exited;
  }
}

/** Last resort when there is neither a binary nor Go: the CLI that @temporalio/testing downloads. */
async function startViaTestingDownload(options: StartTemporalOptions, log: (line: string) => void): Promise<TemporalHandle> {
  log('temporal: no Temporal CLI found and no Go toolchain; asking @temporalio/testing to download one');
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const [port, uiPort, uiBackendPort] = (await freePorts(3)) as [number, number, number];
  const uiBackend = { host: hiddenLoopbackAddress(), port: uiBackendPort };
  let env;
  try {
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        ip: '127.0.0.1',
        port,
        ui: true,
        uiPort: uiBackend.port,
        ...(options.dbFile ? { dbFilename: options.dbFile } : {}),
        extraArgs: [
          '--ui-ip',
          uiBackend.host,
          ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
          ...dynamicConfigArgs(options.dynamicConfig ?? LOW_LATENCY_DYNAMIC_CONFIG),
        ],
      },
    });
  } catch (err) {
    throw new TemporalCliNotFound(notFoundMessage(`the download by @temporalio/testing failed: ${(err as Error).message.split('\n')[0]}`));
  }
  let proxy: HostCheckProxy;
  try {
    proxy = await webUiProxy(uiPort, uiBackend);
  } catch (err) {
    await env.teardown();
    throw err;
  }
  return {
    address: `127.0.0.1:${port}`,
    namespace: 'default',
    uiUrl: `http://127.0.0.1:${uiPort}`,
    source: 'downloaded by @temporalio/testing',
    pid: null,
    dynamicConfig: options.dynamicConfig ?? LOW_LATENCY_DYNAMIC_CONFIG,
    stop: () => proxy.close().then(() => env.teardown()),
  };
}

function notFoundMessage(why: string): string {
  return (
    `No Temporal CLI: TEMPORAL_CLI is unset, \`temporal\` is not on PATH, ${path.join(BIN_DIR, 'temporal')} does not exist, ` +
    `Go is not installed, and ${why}. Set TEMPORAL_CLI=/path/to/temporal (CLI v1.x), ` +
    `or install Go and run: GOBIN=${BIN_DIR} go install ${TEMPORAL_CLI_MODULE}`
  );
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function whichSync(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
