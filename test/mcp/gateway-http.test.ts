/**
 * `settle mcp serve --http` in front of the reference memory server from npm, driven by the
 * official SDK client over streamable HTTP: reads the registry makes A0 are forwarded, writes are
 * settled (an endpoint record, the entity in the memory file once), an A3 tool's call stays pending
 * until `settle approve` decides it: denied, a tool error and nothing deleted; approved, it runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, inject, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { SettleClient } from '../../client/index';
import { approval, TEST_OPERATOR } from '../support/operator';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';
import { until } from '../support/in-doubt';
import { MEMORY_SERVER, nodeCommand, registryFile, startHttpGateway, textOf } from './gateway-process';

const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

it('forwards A0 reads, settles writes and holds A3 calls for settle approve over streamable HTTP', async () => {
  const dir = tempWorkspace('mcp-http');
  const memory = path.join(dir, 'memory.jsonl');
  const registry = registryFile(dir, {
    server: 'memory',
    tools: { read_graph: { level: 'A0' }, create_entities: { level: 'A2' }, delete_entities: { level: 'A3' } },
  });
  const taskQueue = uniqueId('mcp-http');
  const gateway = await startHttpGateway(
    ['--upstream', nodeCommand(MEMORY_SERVER), '--env', 'MEMORY_FILE_PATH', '--registry', registry, '--ungated', '--task-queue', taskQueue],
    { MEMORY_FILE_PATH: memory },
  );
  const stderr = () => gateway.stderr();
  try {
    const client = await gateway.connect(gateway.printedToken!);
    const call = (name: string, args: Record<string, unknown>, callId?: string) =>
      client.callTool({ name, arguments: args, ...(callId ? { _meta: { 'io.settle/call_id': callId } } : {}) }, undefined, {
        timeout: 90_000,
      }) as Promise<CallToolResult>;

    const alice = { entities: [{ name: 'alice', entityType: 'person', observations: ['likes tea'] }] };
    const created = await call('create_entities', alice, 'create-alice');
    expect(created.isError, textOf(created)).toBeFalsy();
    const key = created._meta?.['io.settle/key'] as string;
    expect(created._meta?.['io.settle/resolution']).toBe('executed');
    expect(await store.get(key)).toMatchObject({ state: 'COMPLETED', tool: 'create_entities' });
    const again = await call('create_entities', alice, 'create-alice');
    expect(again._meta?.['io.settle/key']).toBe(key);

    const graph = await call('read_graph', {});
    expect(graph.isError, textOf(graph)).toBeFalsy();
    expect(graph._meta?.['io.settle/key']).toBeUndefined(); // forwarded: no record
    expect(textOf(graph)).toContain('likes tea');
    const lines = fs
      .readFileSync(memory, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"alice"'));
    expect(lines).toHaveLength(1);

    // A3: the call stays pending until an operator decides; the gateway's log names the command.
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const settle = new SettleClient(new TemporalClient({ connection }), taskQueue);
      const pending = async (callId: string) => {
        const seen = stderr().length;
        const answer = call('delete_entities', { entityNames: ['alice'] }, callId);
        const [trajectory, key] = await until(
          async () => {
            const m = /delete_entities \(A3\) waits for an operator: settle approve (\S+) (\S+)/.exec(stderr().slice(seen));
            return m ? [m[1]!, m[2]!] : null;
          },
          'the gateway waiting for approval',
          60_000,
        );
        return { answer, trajectory, key };
      };

      const refused = await pending('delete-alice-1');
      await new Promise((r) => setTimeout(r, 500));
      expect(fs.readFileSync(memory, 'utf8')).toContain('"alice"'); // nothing runs before the decision
      await settle.approve(refused.trajectory, await approval(settle, refused.trajectory, refused.key, 'deny', 'not today'));
      const denied = await refused.answer;
      expect(denied.isError).toBe(true);
      expect(textOf(denied)).toContain(`denied by ${TEST_OPERATOR}: not today`);
      expect(denied._meta?.['io.settle/resolution']).toBe('denied');
      expect(fs.readFileSync(memory, 'utf8')).toContain('"alice"');

      const allowed = await pending('delete-alice-2');
      await settle.approve(allowed.trajectory, await approval(settle, allowed.trajectory, allowed.key, 'approve', 'CHG-1'));
      const deleted = await allowed.answer;
      expect(deleted.isError, textOf(deleted)).toBeFalsy();
      expect(deleted._meta).toMatchObject({ 'io.settle/key': allowed.key, 'io.settle/resolution': 'executed' });
      expect(fs.readFileSync(memory, 'utf8')).not.toContain('"alice"');
    } finally {
      await connection.close();
    }
    await client.close();
  } finally {
    await gateway.stop();
  }
}, 180_000);
