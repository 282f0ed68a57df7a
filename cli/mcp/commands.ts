/**
 * The `settle mcp` commands as the CLI declares them: options only; what serving takes (the MCP
 * SDK, a worker, a client) is imported when the command runs (cli/main.ts says why).
 */
import type { Command } from 'commander';
import { InputError } from '../../core/errors';
import { UsageError } from '../usage-error';
import type { ServeOptions } from './serve';

export function registerMcpCommands(program: Command): void {
  const mcp = program.command('mcp').description('The MCP gateway: settle in front of an MCP server (docs/mcp.md).');
  mcp
    .command('serve')
    .description(
      "Serve an upstream MCP server's tools, or settle's own on a workspace, over MCP: every call settled in the session's trajectory.",
    )
    .option('--upstream <command>', 'the upstream MCP server to start over stdio, e.g. "npx @modelcontextprotocol/server-memory"')
    .option('--registry <file>', "the operator's registry: the server's name, each tool's level and probe (JSON; docs/mcp.md)")
    .option('--name <server>', 'without --registry: the name capabilities grant the server by (mcp:<name>/<tool>)')
    .option('--trajectory <id>', "the session's trajectory (workflow id); default: the capability's audience, else a new id")
    .option(
      '--task-queue <queue>',
      "the gateway worker's task queue, its session's alone (default: settle-mcp-<server>-<hash of the trajectory>)",
    )
    .option('--capability <file>', 'the capability every call is checked against (keys from SETTLE_CAP_KEYS)')
    .option('--ungated', 'serve without a capability: every listed tool is callable (the operator says so)')
    .option(
      '--env <name>',
      'pass this environment variable to the upstream (repeatable); it gets only these and HOME, LOGNAME, PATH, SHELL, TERM, USER',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option('--http <port>', 'serve streamable HTTP on 127.0.0.1:<port> (path /mcp) instead of stdio')
    .option('--token-file <file>', 'with --http: the bearer token clients must send (owner-only file); default: a new one, printed once')
    .option(
      '--allow-origin <origin>',
      'with --http: a browser origin allowed to call (repeatable), e.g. https://app.example; requests with any other Origin are refused',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option('--idle-timeout <duration>', 'with --http: end a session no request touched for this long, e.g. 10m (default 30m)')
    .option('--workspace <dir>', "instead of --upstream: serve settle's own tools (file_view, file_edit, …), run in this directory")
    .option('--lint-details', "log each lint finding on the upstream's tools at start (default: one summary line)")
    .option('--approval-timeout <duration>', 'how long an A3 call waits for `settle approve` before it is denied, e.g. 30m (default 1h)')
    .action(async (opts: ServeOptions) => {
      const { serve } = await import('./serve');
      try {
        await serve(opts);
      } catch (err) {
        // Bad flags, registry or capability file: a usage error (exit 2) naming the field and the rule.
        if (err instanceof InputError) throw new UsageError(err.message);
        throw err;
      }
    });
}
