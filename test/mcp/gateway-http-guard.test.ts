/**
 * Who may talk to `settle mcp serve --http` (cli/mcp/http-guard.ts): a request naming another Host
 * (DNS rebinding), a browser Origin the operator did not allow, no token or a wrong one are each
 * refused before a session exists; the official SDK client with the token lists and calls tools.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { tempWorkspace, uniqueId } from '../support/env';
import { runSettle } from '../support/cli';
import { startHttpGateway, textOf, type HttpGateway } from './gateway-process';

const gateways: HttpGateway[] = [];
afterAll(async () => {
  for (const g of gateways) await g.stop();
});

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});

/** An initialize request with exactly these headers (node:http lets a test set Host, as a rebinding browser does). */
function initialize(url: string, headers: Record<string, string>): Promise<{ status: number; body: string; session: unknown }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, session: res.headers['mcp-session-id'] }));
      },
    );
    req.on('error', reject);
    req.end(INITIALIZE);
  });
}

async function workspaceGateway(extra: string[] = []): Promise<{ gateway: HttpGateway; dir: string }> {
  const dir = tempWorkspace('mcp-guard');
  fs.writeFileSync(path.join(dir, 'note.txt'), 'hello from the workspace\n');
  const gateway = await startHttpGateway(['--workspace', dir, '--ungated', '--task-queue', uniqueId('mcp-guard'), ...extra]);
  gateways.push(gateway);
  return { gateway, dir };
}

describe('settle mcp serve --http: Host, Origin and bearer token', () => {
  it('refuses a foreign Host or Origin and a missing or wrong token; the SDK client with the printed token is served', async () => {
    const { gateway, dir } = await workspaceGateway();
    const token = gateway.printedToken!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(gateway.stderr().split(token)).toHaveLength(2); // printed once
    const port = new URL(gateway.url).port;
    const bearer = { authorization: `Bearer ${token}` };

    const rebound = await initialize(gateway.url, { ...bearer, host: `evil.example:${port}`, origin: 'http://evil.example' });
    expect(rebound).toMatchObject({ status: 421, session: undefined });
    expect(rebound.body).toMatch(/^Host "evil\.example:\d+" is not this gateway's \(127\.0\.0\.1:\d+, localhost:\d+\)\n$/);
    expect(await initialize(gateway.url, { ...bearer, host: `127.0.0.1:${Number(port) + 1}` })).toMatchObject({ status: 421 });

    const page = await initialize(gateway.url, { ...bearer, origin: 'http://evil.example' });
    expect(page).toMatchObject({ status: 403, session: undefined });
    expect(page.body).toContain('Origin "http://evil.example" is not allowed');

    const anonymous = await initialize(gateway.url, {});
    expect(anonymous).toMatchObject({ status: 401, session: undefined });
    expect(anonymous.body).toContain('Authorization: must be "Bearer <token>"');
    const wrong = await initialize(gateway.url, { authorization: `Bearer ${token.slice(0, -1)}x` });
    expect(wrong).toMatchObject({ status: 401, session: undefined });
    expect(wrong.body).toBe("Authorization: the bearer token is not this gateway's\n");
    expect(gateway.stderr()).toContain('settle mcp: refused an HTTP request (421)');

    // localhost:<port> names the gateway too.
    const local = await initialize(gateway.url, { ...bearer, host: `localhost:${port}` });
    expect(local.status, local.body).toBe(200);
    expect(typeof local.session).toBe('string');

    // The official SDK client: without the token it cannot connect; with it, it lists and calls.
    const stranger = new Client({ name: 'stranger', version: '0' });
    await expect(stranger.connect(new StreamableHTTPClientTransport(new URL(gateway.url)))).rejects.toThrow();
    const client = await gateway.connect(token);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('file_view');
      const viewed = (await client.callTool(
        { name: 'file_view', arguments: { path: path.join(dir, 'note.txt'), offset: 1, limit: 10 } },
        undefined,
        { timeout: 90_000 },
      )) as CallToolResult;
      expect(viewed.isError, textOf(viewed)).toBeFalsy();
      expect(textOf(viewed)).toContain('hello from the workspace');
    } finally {
      await client.close();
    }
  }, 180_000);

  it('takes the token from --token-file (never printing it) and lets an --allow-origin page in', async () => {
    const token = `${uniqueId('tok')}-${'a'.repeat(32)}`;
    const file = path.join(tempWorkspace('mcp-token'), 'token');
    fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
    const { gateway } = await workspaceGateway(['--token-file', file, '--allow-origin', 'https://app.example']);
    expect(gateway.printedToken).toBeNull();
    expect(gateway.stderr()).not.toContain(token);
    const bearer = { authorization: `Bearer ${token}` };
    expect(await initialize(gateway.url, { ...bearer, origin: 'https://app.example' })).toMatchObject({ status: 200 });
    expect(await initialize(gateway.url, { ...bearer, origin: 'https://app.example.evil' })).toMatchObject({ status: 403 });
    expect(await initialize(gateway.url, { authorization: 'Bearer wrong', origin: 'https://app.example' })).toMatchObject({ status: 401 });
    const client = await gateway.connect(token);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  }, 180_000);

  it('refuses a token file others can read, a short token, a path origin and the flags without --http, in one line', async () => {
    const dir = tempWorkspace('mcp-token-bad');
    const open = path.join(dir, 'open');
    fs.writeFileSync(open, `${'a'.repeat(40)}\n`, { mode: 0o644 });
    fs.chmodSync(open, 0o644);
    const short = path.join(dir, 'short');
    fs.writeFileSync(short, 'secret\n', { mode: 0o600 });
    const cases: [string[], RegExp][] = [
      [['--token-file', open, '--http', '0'], /--token-file: must be readable by its owner only \(it is mode 644/],
      [['--token-file', short, '--http', '0'], /--token-file: must hold one token of at least 32 characters/],
      [['--allow-origin', 'https://app.example/', '--http', '0'], /--allow-origin: must be an origin such as/],
      [['--token-file', short], /--token-file: only with --http/],
    ];
    for (const [flags, message] of cases) {
      const { code, stderr } = await runSettle(['mcp', 'serve', '--workspace', dir, '--ungated', ...flags]);
      expect(code, stderr).toBe(2);
      expect(stderr.trim().split('\n'), stderr).toHaveLength(1);
      expect(stderr).toMatch(message);
    }
  }, 60_000);
});
