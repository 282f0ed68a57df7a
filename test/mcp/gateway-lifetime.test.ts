/**
 * A stdio gateway lives as long as its client: a client process (the official SDK client, as an
 * IDE or agent holds it) killed while idle takes its gateway, the gateway's worker and its
 * upstream with it within seconds; an HTTP session no request touches ends at its idle timeout
 * (docs/mcp.md#when-the-session-ends).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { tempWorkspace } from '../support/env';
import { SETTLE_BIN } from '../support/cli';
import { until } from '../support/in-doubt';
import { LEDGER_SERVER, nodeCommand, stackEnv, STDIO_CLIENT } from './gateway-process';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.each(['SIGKILL', 'SIGTERM'] as const)('the client of a stdio gateway ended by %s while idle', (signal) => {
  it('ends the gateway and its upstream within seconds', async () => {
    const dir = tempWorkspace('mcp-lifetime');
    const ledger = path.join(dir, 'ledger');
    const client = spawn(
      process.execPath,
      ['--import', 'tsx', STDIO_CLIENT, SETTLE_BIN, '--upstream', nodeCommand(LEDGER_SERVER, ledger), '--name', 'ledger', '--ungated'],
      { env: { ...process.env, ...stackEnv() }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    client.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    client.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const gatewayPid = Number(await until(async () => /^ready (\d+)$/m.exec(stdout)?.[1], `the client connected\n${stderr}`));
    const upstreamPid = Number(
      await until(async () => fs.existsSync(`${ledger}.pid`) && fs.readFileSync(`${ledger}.pid`, 'utf8'), 'the upstream'),
    );
    expect(alive(gatewayPid) && alive(upstreamPid)).toBe(true);

    client.kill(signal);
    const killed = Date.now();
    await until(async () => !alive(gatewayPid) && !alive(upstreamPid), `the gateway and its upstream gone\n${stderr}`, 20_000);
    expect(Date.now() - killed).toBeLessThan(15_000);
  }, 180_000);
});

describe('an HTTP session whose client vanished', () => {
  it('ends at its idle timeout, and a new session works', async () => {
    const dir = tempWorkspace('mcp-idle');
    const ledger = path.join(dir, 'ledger');
    const gateway = spawn(
      process.execPath,
      [
        SETTLE_BIN,
        'mcp',
        'serve',
        '--upstream',
        nodeCommand(LEDGER_SERVER, ledger),
        '--name',
        'ledger',
        '--ungated',
        '--http',
        '0',
        '--idle-timeout',
        '2s',
      ],
      { env: { ...process.env, ...stackEnv() }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    gateway.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    try {
      const url = await until(async () => /streamable HTTP on (http:\/\/\S+)/.exec(stderr)?.[1], `the gateway listening\n${stderr}`);
      const token = /bearer token for this start \([^)]*\): (\S+)/.exec(stderr)![1]!;
      const withToken = { requestInit: { headers: { authorization: `Bearer ${token}` } } };
      const client = new Client({ name: 'settle-test', version: '0.1.0' });
      const transport = new StreamableHTTPClientTransport(new URL(url), withToken);
      await client.connect(transport);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('append-entry');
      const sessionId = transport.sessionId!;
      // The client vanishes without ending its session (no DELETE): its connections close, nothing more.
      await client.close();
      await until(async () => stderr.includes(`HTTP session ${sessionId} ended: idle for 2 s`), `the session ended\n${stderr}`, 20_000);
      const stale = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sessionId,
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      expect(stale.status).toBe(404);

      const next = new Client({ name: 'settle-test', version: '0.1.0' });
      await next.connect(new StreamableHTTPClientTransport(new URL(url), withToken));
      expect((await next.listTools()).tools.length).toBeGreaterThan(0);
      await next.close();
    } finally {
      gateway.kill('SIGTERM');
      await new Promise((r) => gateway.once('exit', r));
    }
  }, 180_000);
});
