/**
 * The gateway's operator keys (cli/mcp/operator-keys.ts). Started by hand next to a running
 * `settle dev`, it holds the dev key's public half, so `settle approve` (signing with that key, as
 * the CLI does without SETTLE_OPERATOR_KEY) decides its A3 calls. With no keys at all, the tools
 * that need an operator (A3, settled without a probe) are listed but refused in one line.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DEV_SETTINGS_FILE, writeDevSettings } from '../../cli/dev-settings';
import { generateOperatorKey } from '../../activities/operator/operator-keys';
import { inject } from 'vitest';
import { tempWorkspace, uniqueId } from '../support/env';
import { runSettle } from '../support/cli';
import { until } from '../support/in-doubt';
import { MEMORY_SERVER, nodeCommand, registryFile, startHttpGateway, textOf, type HttpGateway } from './gateway-process';

const gateways: HttpGateway[] = [];
afterAll(async () => {
  for (const g of gateways) await g.stop();
});

/** Neither the test run's on-call operator keys nor any other: the operator's environment as `settle dev` leaves it. */
const NO_OPERATOR_ENV = { SETTLE_OPERATOR_KEYS: '', SETTLE_OPERATOR_KEY: '' };

async function memoryGateway(env: Record<string, string>): Promise<{ gateway: HttpGateway; memory: string }> {
  const dir = tempWorkspace('mcp-opkeys');
  const memory = path.join(dir, 'memory.jsonl');
  const registry = registryFile(dir, {
    server: 'memory',
    tools: { read_graph: { level: 'A0' }, create_entities: { level: 'A2' }, delete_entities: { level: 'A3' } },
  });
  const gateway = await startHttpGateway(
    [
      '--upstream',
      nodeCommand(MEMORY_SERVER),
      '--env',
      'MEMORY_FILE_PATH',
      '--registry',
      registry,
      '--ungated',
      '--task-queue',
      uniqueId('mcp-opkeys'),
    ],
    { ...env, MEMORY_FILE_PATH: memory },
  );
  gateways.push(gateway);
  return { gateway, memory };
}

const call = (client: Awaited<ReturnType<HttpGateway['connect']>>, name: string, args: Record<string, unknown>, callId?: string) =>
  client.callTool({ name, arguments: args, ...(callId ? { _meta: { 'io.settle/call_id': callId } } : {}) }, undefined, {
    timeout: 90_000,
  }) as Promise<CallToolResult>;

describe("settle mcp serve: the operator's keys", () => {
  it('without operator keys, refuses the A3 tool and the probe-less settled tool in one line, and serves the rest', async () => {
    expect(fs.existsSync(DEV_SETTINGS_FILE), 'a settle dev runs in this checkout').toBe(false);
    const { gateway } = await memoryGateway(NO_OPERATOR_ENV);
    expect(gateway.stderr()).toMatch(
      /delete_entities is not served: A3: it needs `settle approve`, and this gateway holds no operator keys \(set SETTLE_OPERATOR_KEYS, or run `settle dev`\)\n/,
    );
    expect(gateway.stderr()).toMatch(/create_entities is not served: A2 without a probe: an in-doubt call needs `settle resolve`/);
    const client = await gateway.connect(gateway.printedToken!);
    try {
      const refused = await call(client, 'delete_entities', { entityNames: ['alice'] }, 'd-1');
      expect(refused.isError).toBe(true);
      expect(textOf(refused).split('\n')).toHaveLength(1);
      expect(textOf(refused)).toContain('delete_entities cannot be called through settle: A3: it needs `settle approve`');
      expect((await call(client, 'create_entities', { entities: [] }, 'c-1')).isError).toBe(true);
      const read = await call(client, 'read_graph', {});
      expect(read.isError, textOf(read)).toBeFalsy();
    } finally {
      await client.close();
    }
  }, 180_000);

  it('started by hand beside a running settle dev, holds its key: settle approve decides an A3 call', async () => {
    expect(fs.existsSync(DEV_SETTINGS_FILE), 'a settle dev runs in this checkout').toBe(false);
    const keyFile = path.join(tempWorkspace('mcp-devkey'), 'operator-key');
    fs.writeFileSync(keyFile, `${generateOperatorKey('dev-operator').privateText}\n`, { mode: 0o600 });
    // A running settle dev as the CLI finds it: its settings, its process alive (this one), its key file.
    writeDevSettings({
      temporalAddress: inject('temporalAddress'),
      namespace: 'default',
      taskQueue: uniqueId('unused'),
      databaseUrl: inject('databaseUrl'),
      uiUrl: null,
      pid: process.pid,
      operatorKeyFile: keyFile,
    });
    try {
      const { gateway, memory } = await memoryGateway(NO_OPERATOR_ENV);
      expect(gateway.stderr()).not.toContain('holds no operator keys');
      const client = await gateway.connect(gateway.printedToken!);
      try {
        const created = await call(
          client,
          'create_entities',
          { entities: [{ name: 'alice', entityType: 'person', observations: [] }] },
          'c-1',
        );
        expect(created.isError, textOf(created)).toBeFalsy();
        const answer = call(client, 'delete_entities', { entityNames: ['alice'] }, 'd-1');
        const [trajectory, key] = await until(
          async () => {
            const m = /delete_entities \(A3\) waits for an operator: settle approve (\S+) (\S+)/.exec(gateway.stderr());
            return m ? [m[1]!, m[2]!] : null;
          },
          'the gateway waiting for approval',
          60_000,
        );
        // The CLI as the operator runs it: no SETTLE_OPERATOR_KEY, so it signs with settle dev's key.
        const approved = await runSettle(['approve', trajectory, key, '--reason', 'CHG-7'], { env: NO_OPERATOR_ENV });
        expect(approved.code, approved.stderr).toBe(0);
        expect(approved.stdout).toContain('by dev-operator');
        const deleted = await answer;
        expect(deleted.isError, textOf(deleted)).toBeFalsy();
        expect(deleted._meta?.['io.settle/resolution']).toBe('executed');
        expect(fs.readFileSync(memory, 'utf8')).not.toContain('"alice"');
      } finally {
        await client.close();
      }
    } finally {
      fs.rmSync(DEV_SETTINGS_FILE, { force: true });
    }
  }, 180_000);
});
