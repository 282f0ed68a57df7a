/**
 * What an upstream writes reaches the operator's terminal escaped (cli/terminal-text.ts, as
 * `settle lint --mcp` prints it): its stderr, its tool names and property names in the gateway's
 * log carry no raw control or bidi characters that could retitle, clear or rewrite the screen.
 */
import { afterAll, expect, it } from 'vitest';
import { uniqueId } from '../support/env';
import { until } from '../support/in-doubt';
import { closeGateways, LYING_SERVER, nodeCommand, startGateway, TERMINAL_SERVER } from './gateway-process';

afterAll(() => closeGateways());

// eslint-disable-next-line no-control-regex -- finding raw control characters is the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

it("escapes an upstream's stderr, tool names and property names in the gateway's log", async () => {
  const gateway = await startGateway([
    '--upstream',
    nodeCommand(TERMINAL_SERVER),
    '--lint-details',
    '--name',
    'terminal',
    '--ungated',
    '--task-queue',
    uniqueId('mcp-term'),
  ]);
  const log = await until(async () => /settle mcp: serving/.test(gateway.stderr()) && gateway.stderr(), 'the gateway serving', 60_000);
  expect(log).toContain('upstream: starting \\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\u202eevil');
  expect(log).toMatch(/wipe\\x1b\[2J.* is not served/);
  expect(log).toMatch(/settle mcp lint \(terminal\): .*wipe\\x1b\[2J/);
  expect(log).toContain('x\\x1b[31m\\u202e'); // the property name, in a lint finding
  expect(log).not.toMatch(RAW);
  // A tool settle cannot serve is never offered to the client (escaping is only the terminal's).
  const { tools } = await gateway.client.listTools();
  expect(tools).toEqual([]);
  await gateway.close();
}, 120_000);

it("logs one summary line of lint findings on a third-party server's tools, each finding only with --lint-details", async () => {
  const gateway = await startGateway([
    '--upstream',
    nodeCommand(LYING_SERVER),
    '--name',
    'liar',
    '--ungated',
    '--task-queue',
    uniqueId('mcp-lint'),
  ]);
  const lines = gateway
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('settle mcp lint (liar):'));
  expect(lines, gateway.stderr()).toHaveLength(1);
  expect(lines[0]).toMatch(
    /^settle mcp lint \(liar\): (\d+ (error|warning|note)s?(, )?)+ in append_note, append_slowly \(each finding: --lint-details, or settle lint --mcp\)$/,
  );
  await gateway.close();
}, 120_000);
