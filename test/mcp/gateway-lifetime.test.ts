/**
 * A stdio gateway lives as long as its client: a client process (the official SDK client, as an
 * IDE or agent holds it) killed while idle takes its gateway, the gateway's worker and its
 * upstream with it within seconds (docs/mcp.md#when-the-session-ends).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
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
