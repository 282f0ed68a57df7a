/**
 * `@modelcontextprotocol/server-everything` behind the gateway: MCP tool names in kebab case
 * (`get-sum`, `get-tiny-image`, …) are served like any other, and the start line counts only
 * what is served (docs/mcp.md#tools-settle-cannot-name).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDb, tempWorkspace, testStore } from '../support/env';
import { until } from '../support/in-doubt';
import { gatewayTools } from '../../activities/mcp/gateway-tools';
import type { UpstreamServer } from '../../activities/mcp/upstream';
import { closeGateways, EVERYTHING_SERVER, nodeCommand, registryFile, startGateway, textOf } from './gateway-process';

const db = openTestDb(2);
const store = testStore(db);

afterAll(async () => {
  await closeGateways();
  await db.destroy();
});

describe('settle mcp serve in front of @modelcontextprotocol/server-everything', () => {
  it('serves all 13 tools, the kebab-case ones too: A0 forwarded, the others settled under their own names', async () => {
    const dir = tempWorkspace('mcp-everything');
    const gateway = await startGateway([
      '--upstream',
      nodeCommand(EVERYTHING_SERVER, 'stdio'),
      '--registry',
      registryFile(dir, { server: 'everything', tools: { echo: { level: 'A0' }, 'get-tiny-image': { level: 'A0' } } }),
      '--ungated',
    ]);
    const listed = (await gateway.client.listTools()).tools.map((t) => t.name);
    expect(listed).toHaveLength(13);
    expect(listed).toContain('get-sum');
    await until(
      async () => gateway.stderr().includes('settle mcp: serving 13 tool(s) of everything'),
      `the start line\n${gateway.stderr()}`,
    );
    expect(gateway.stderr()).not.toContain('is not served');

    const echoed = await gateway.call('echo', { message: 'hi' });
    expect(echoed.isError, textOf(echoed)).toBeFalsy();
    expect(textOf(echoed)).toContain('hi');
    expect(echoed._meta?.['io.settle/key']).toBeUndefined();

    const sum = await gateway.call('get-sum', { a: 2, b: 3 }, 'sum-1');
    expect(sum.isError, textOf(sum)).toBeFalsy();
    expect(textOf(sum)).toContain('5');
    const key = sum._meta?.['io.settle/key'] as string;
    expect(await store.get(key)).toMatchObject({ tool: 'get-sum', state: 'COMPLETED' });
    const again = await gateway.call('get-sum', { a: 2, b: 3 }, 'sum-1');
    expect(again._meta?.['io.settle/key']).toBe(key);
    expect(textOf(again)).toBe(textOf(sum));

    const image = await gateway.call('get-tiny-image', {});
    expect(image.isError, textOf(image)).toBeFalsy();
    await gateway.close();
  }, 180_000);
});

describe('gatewayTools', () => {
  it('serves MCP names settle can key, and refuses the others with the reason', () => {
    const upstream = {} as UpstreamServer;
    const { tools } = gatewayTools(upstream, [{ name: 'get-sum' }, { name: 'getSum' }, { name: 'files.read' }, { name: 'file_edit' }], {
      server: 'x',
      tools: {},
    });
    expect(tools.get('get-sum')).toMatchObject({ served: true, level: 'A2' });
    expect(tools.get('getSum')).toMatchObject({ served: false, reason: expect.stringContaining('lower-case letters, digits, _ and -') });
    expect(tools.get('files.read')).toMatchObject({ served: false });
    expect(tools.get('file_edit')).toMatchObject({ served: false, reason: 'file_edit is the name of a settle built-in tool' });
  });
});
