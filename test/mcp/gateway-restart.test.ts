/**
 * A gateway's session after a clean stop (cli/mcp/session-workflow.ts): the stop ends the run of
 * the session's workflow; a gateway started again on the trajectory goes on in a new run under the
 * same id (while one serves it, a second is refused: one gateway per session). Call keys derive from the trajectory, never the run:
 * a completed call replays from its record (the file edited once), a new call runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { tempWorkspace, uniqueId } from '../support/env';
import { until } from '../support/in-doubt';
import { startHttpGateway, textOf, type HttpGateway } from './gateway-process';

const gateways: HttpGateway[] = [];
afterAll(async () => {
  for (const g of gateways) await g.stop();
});

describe('settle mcp serve --trajectory after a clean stop', () => {
  it('a gateway started again after a clean stop serves the trajectory in a new run; one beside a serving gateway is refused', async () => {
    const dir = tempWorkspace('mcp-restart');
    const counter = path.join(dir, 'counter.txt');
    fs.writeFileSync(counter, 'count:\n');
    const trajectory = uniqueId('mcp-restart');
    const args = ['--workspace', dir, '--ungated', '--trajectory', trajectory, '--task-queue', uniqueId('mcp-restart')];
    const start = async () => {
      const g = await startHttpGateway(args);
      gateways.push(g);
      return g;
    };
    const edit = async (gateway: HttpGateway, callId: string) => {
      const client = await gateway.connect(gateway.printedToken!);
      try {
        const result = (await client.callTool(
          {
            name: 'file_edit',
            arguments: { path: counter, old_str: 'count:', new_str: 'count:I' },
            _meta: { 'io.settle/call_id': callId },
          },
          undefined,
          { timeout: 90_000 },
        )) as CallToolResult;
        expect(result.isError, textOf(result)).toBeFalsy();
        return { key: result._meta?.['io.settle/key'], resolution: result._meta?.['io.settle/resolution'] };
      } finally {
        await client.close();
      }
    };
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const temporal = new TemporalClient({ connection });
    const runs = async () => {
      const list: { runId: string; status: string }[] = [];
      for await (const w of temporal.workflow.list({ query: `WorkflowId = '${trajectory}'` }))
        list.push({ runId: w.runId, status: w.status.name });
      return list;
    };
    const completed = (n: number) =>
      until(async () => (await runs()).filter((r) => r.status === 'COMPLETED').length >= n, `${n} completed run(s) of the session`, 60_000);
    try {
      const first = await start();
      const ran = await edit(first, 'edit-1');
      expect(ran.resolution).toBe('executed');
      // One gateway per session: a second one beside it is refused at start.
      await expect(start()).rejects.toThrow(/must have no other (worker|gateway)/);
      await first.stop(); // SIGTERM: the gateway closes the session; its run completes
      expect(first.process.exitCode, first.stderr()).toBe(0);
      await completed(1);

      // Started again on the trajectory: a new run, where a completed call replays from its record.
      const second = await start();
      expect(await edit(second, 'edit-1')).toEqual({ key: ran.key, resolution: 'replayed' });
      expect(await edit(second, 'edit-2')).toMatchObject({ resolution: 'executed' });
      expect(fs.readFileSync(counter, 'utf8')).toBe('count:II\n');
      await second.stop();
      expect(second.process.exitCode, second.stderr()).toBe(0);
      await completed(2);

      // Started again on the trajectory: its next run, where a completed call replays from its record.
      const again = await start();
      expect(await edit(again, 'edit-2')).toMatchObject({ resolution: 'replayed' });
      expect(await edit(again, 'edit-3')).toMatchObject({ resolution: 'executed' });
      expect(fs.readFileSync(counter, 'utf8')).toBe('count:III\n');
      expect((await runs()).map((r) => r.status).sort()).toEqual(['COMPLETED', 'COMPLETED', 'RUNNING']);
    } finally {
      await connection.close();
    }
  }, 240_000);
});
