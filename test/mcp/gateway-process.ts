/**
 * `settle mcp serve` as an MCP client starts it: a process on stdio, driven by the official SDK
 * client, with the test stack's Temporal and Postgres and settle's pre-built workflow bundle.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SETTLE_BIN } from '../support/cli';
import { until } from '../support/in-doubt';

const NODE_MODULES = fileURLToPath(new URL('../../node_modules/', import.meta.url));
export const FILESYSTEM_SERVER = path.join(NODE_MODULES, '@modelcontextprotocol/server-filesystem/dist/index.js');
export const MEMORY_SERVER = path.join(NODE_MODULES, '@modelcontextprotocol/server-memory/dist/index.js');
export const EVERYTHING_SERVER = path.join(NODE_MODULES, '@modelcontextprotocol/server-everything/dist/index.js');
export const LYING_SERVER = fileURLToPath(new URL('./fixtures/lying-server.ts', import.meta.url));
export const TERMINAL_SERVER = fileURLToPath(new URL('./fixtures/terminal-server.ts', import.meta.url));
export const LEDGER_SERVER = fileURLToPath(new URL('./fixtures/ledger-server.ts', import.meta.url));
export const STDIO_CLIENT = fileURLToPath(new URL('./fixtures/stdio-client.ts', import.meta.url));

/** The test stack, as a gateway (or any settle command) reads it. */
export function stackEnv(): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DATABASE_URL: inject('databaseUrl'),
    SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
  };
}

/** The trajectory and task queue a gateway's start line names. */
export function servedSession(stderr: string): { trajectory: string; taskQueue: string } {
  const match = / in trajectory (\S+) on task queue (\S+)/.exec(stderr);
  if (!match) throw new Error(`no start line in the gateway's stderr:\n${stderr}`);
  return { trajectory: match[1]!, taskQueue: match[2]! };
}

/** A command line running `script` with this Node (TypeScript through tsx), quoted as --upstream takes it. */
export function nodeCommand(script: string, ...args: string[]): string {
  const words = script.endsWith('.ts') ? [process.execPath, '--import', 'tsx', script] : [process.execPath, script];
  return [...words, ...args].map((w) => JSON.stringify(w)).join(' ');
}

export interface GatewaySession {
  client: Client;
  /** The gateway's process id. */
  pid: number;
  /** What the gateway wrote on stderr so far. */
  stderr: () => string;
  /** Resolves when the gateway process has exited (its stdio closed). */
  exited: Promise<void>;
  call(name: string, args: Record<string, unknown>, callId?: string): Promise<CallToolResult>;
  close(): Promise<void>;
}

const open: GatewaySession[] = [];

/** Starts a gateway with `args` after `settle mcp serve` and connects the SDK client to it. */
export async function startGateway(args: string[], env: Record<string, string> = {}): Promise<GatewaySession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SETTLE_BIN, 'mcp', 'serve', ...args],
    env: { ...(process.env as Record<string, string>), ...stackEnv(), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  let exit: () => void = () => {};
  const exited = new Promise<void>((resolve) => (exit = resolve));
  const client = new Client({ name: 'settle-test', version: '0.1.0' });
  client.onclose = () => exit();
  try {
    await client.connect(transport, { timeout: 90_000 });
  } catch (err) {
    throw new Error(`the gateway did not start: ${(err as Error).message}\n${stderr}`);
  }
  const session: GatewaySession = {
    client,
    pid: transport.pid!,
    stderr: () => stderr,
    exited,
    call: (name, callArgs, callId) =>
      client.callTool(
        { name, arguments: callArgs, ...(callId === undefined ? {} : { _meta: { 'io.settle/call_id': callId } }) },
        undefined,
        { timeout: 90_000 },
      ) as Promise<CallToolResult>,
    close: () => client.close(),
  };
  open.push(session);
  return session;
}

/** For afterAll: every gateway still running is closed, and SIGKILLed if it does not go. */
export async function closeGateways(): Promise<void> {
  for (const s of open.splice(0)) {
    await Promise.race([s.close(), new Promise((r) => setTimeout(r, 5000))]);
    try {
      process.kill(s.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The text a tool result shows. */
export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/** Writes the registry to a file in `dir` and returns its path. */
export function registryFile(dir: string, registry: unknown): string {
  const file = path.join(dir, `registry-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(file, JSON.stringify(registry));
  return file;
}

export interface HttpGateway {
  process: ChildProcess;
  /** http://127.0.0.1:<port>/mcp */
  url: string;
  /** The bearer token the gateway printed (null when it read one from --token-file). */
  printedToken: string | null;
  stderr: () => string;
  /** The official SDK client over streamable HTTP, sending `Authorization: Bearer <token>`. */
  connect(token: string): Promise<Client>;
  stop(): Promise<void>;
}

/** Starts `settle mcp serve … --http 0` and waits until it listens. */
export async function startHttpGateway(args: string[], env: Record<string, string> = {}): Promise<HttpGateway> {
  const child = spawn(process.execPath, [SETTLE_BIN, 'mcp', 'serve', ...args, '--http', '0'], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: inject('databaseUrl'),
      SETTLE_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const url = await until(
    async () => /streamable HTTP on (http:\/\/\S+)/.exec(stderr)?.[1] ?? (child.exitCode !== null && 'exited'),
    'the gateway listening',
    90_000,
  );
  if (url === 'exited') throw new Error(`the gateway exited:\n${stderr}`);
  return {
    process: child,
    url,
    printedToken: /bearer token for this start \([^)]*\): (\S+)/.exec(stderr)?.[1] ?? null,
    stderr: () => stderr,
    async connect(token) {
      const client = new Client({ name: 'settle-test', version: '0.1.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      );
      return client;
    },
    stop,
  };
}
