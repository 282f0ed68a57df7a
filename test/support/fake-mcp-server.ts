/**
 * A minimal MCP server over stdio (newline-delimited JSON-RPC): it answers `initialize` and
 * `tools/list` with the given tools, writes `stderr` to its stderr first, and records the names
 * of the environment variables it was started with in `envFile`. A stand-in for an untrusted
 * server that `settle lint --mcp` starts.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface FakeMcpServer {
  /** The `--mcp` command line that starts it. */
  commandLine: string;
  /** The environment variable names it was started with (after it has run). */
  envNames(): string[];
}

export function fakeMcpServer(dir: string, options: { tools: unknown[]; stderr?: string }): FakeMcpServer {
  const script = path.join(dir, 'fake-mcp-server.cjs');
  const envFile = path.join(dir, 'env.json');
  fs.writeFileSync(
    script,
    `const fs = require('node:fs');
fs.writeFileSync(${JSON.stringify(envFile)}, JSON.stringify(Object.keys(process.env)));
process.stderr.write(${JSON.stringify(options.stderr ?? '')});
const tools = ${JSON.stringify(options.tools)};
let buffer = '';
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf('\\n')) >= 0) {
    const message = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (message.id === undefined) continue;
    const result = message.method === 'initialize'
      ? { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'fake', version: '1.0.0' } }
      : message.method === 'tools/list' ? { tools } : null;
    const reply = result ? { jsonrpc: '2.0', id: message.id, result } : { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no such method' } };
    process.stdout.write(JSON.stringify(reply) + '\\n');
  }
});
`,
  );
  return {
    commandLine: `"${process.execPath}" "${script}"`,
    envNames: () => JSON.parse(fs.readFileSync(envFile, 'utf8')) as string[],
  };
}
