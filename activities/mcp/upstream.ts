/**
 * The gateway's connection to its upstream MCP server (docs/mcp.md), over stdio with the official
 * SDK client. Results are passed on as the server wrote them (a loose schema, not the SDK's
 * strict one): the gateway forwards, it does not judge. When the server dies, the call in flight
 * fails (that call ends IN_DOUBT: its effect is unknown) and the next call starts the server again.
 */
// The MCP SDK's client, not settle's client/ layer (the layering rule's pattern matches the name).
// eslint-disable-next-line no-restricted-imports
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
// eslint-disable-next-line no-restricted-imports
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';

const ToolsPage = z.object({ tools: z.array(z.record(z.string(), z.unknown())), nextCursor: z.string().optional() }).loose();
const CallResult = z.object({ content: z.array(z.unknown()).optional(), isError: z.boolean().optional() }).loose();
export type UpstreamCallResult = z.output<typeof CallResult>;
/** One tool as the upstream lists it, unchanged. */
export type UpstreamTool = Record<string, unknown> & { name?: unknown };

/** Pages after which a server that keeps returning cursors is considered broken. */
const MAX_PAGES = 100;

export interface UpstreamOptions {
  command: string;
  args: readonly string[];
  /** The server's environment (the SDK adds its minimal default: HOME, PATH, …). */
  env: Record<string, string>;
  /** Budget for starting the server and for tools/list, ms. */
  startTimeoutMs: number;
  /** Budget for one tools/call, ms (reset by the server's progress notifications). */
  callTimeoutMs: number;
  /** Where the server's stderr lines go. */
  log: (line: string) => void;
}

export class UpstreamServer {
  private connected: Promise<Client> | null = null;

  constructor(private readonly options: UpstreamOptions) {}

  /** The command line that starts the server: what names this upstream instance. */
  get commandLine(): readonly string[] {
    return [this.options.command, ...this.options.args];
  }

  /** Every page of the server's tools/list, each tool as the server wrote it. */
  async listTools(): Promise<UpstreamTool[]> {
    const client = await this.client();
    const tools: UpstreamTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, ToolsPage, {
        timeout: this.options.startTimeoutMs,
      });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) return tools;
    }
    throw new Error(`the upstream's tools/list still returned a cursor after ${MAX_PAGES} pages`);
  }

  /** Resolves once the server is started and initialized (started again if it had died). */
  async ready(): Promise<void> {
    await this.client();
  }

  /** One tools/call; `meta` goes in the request's `_meta` (the settle key, so the server can use it). */
  async callTool(name: string, args: Record<string, unknown>, meta: Record<string, unknown>): Promise<UpstreamCallResult> {
    const client = await this.client();
    return client.request({ method: 'tools/call', params: { name, arguments: args, _meta: meta } }, CallResult, {
      timeout: this.options.callTimeoutMs,
      resetTimeoutOnProgress: true,
    });
  }

  async close(): Promise<void> {
    const connected = this.connected;
    this.connected = null;
    if (connected) await (await connected.catch(() => null))?.close().catch(() => {});
  }

  /** The connected client, started (again) when there is none. */
  private client(): Promise<Client> {
    if (!this.connected) {
      const attempt = this.connect();
      this.connected = attempt;
      attempt.catch(() => {
        if (this.connected === attempt) this.connected = null;
      });
    }
    return this.connected;
  }

  private async connect(): Promise<Client> {
    const { command, args, env, log } = this.options;
    const transport = new StdioClientTransport({ command, args: [...args], env, stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) log(`upstream: ${line.trimEnd()}`);
    });
    const client = new Client({ name: 'settle-mcp-gateway', version: '0.1.0' });
    client.onclose = () => {
      // The server is gone (it exited, or its pipe broke): the next call starts it again.
      if (this.connected) void this.connected.then((c) => c === client && (this.connected = null)).catch(() => {});
      log('upstream: the connection closed');
    };
    await client.connect(transport, { timeout: this.options.startTimeoutMs });
    return client;
  }
}
