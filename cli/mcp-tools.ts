/**
 * Lists the tools of an MCP server over stdio, with the official MCP TypeScript SDK client, and
 * returns the raw `tools/list` result (every page) so the linter sees exactly what the server
 * publishes. The SDK's own result schema is not applied: it would reject the malformed
 * definitions this is meant to report on.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';
import { InputError } from '../core/errors';

const ToolsPage = z.object({ tools: z.array(z.unknown()), nextCursor: z.string().optional() }).loose();

/** Pages after which a server that keeps returning cursors is considered broken. */
const MAX_PAGES = 100;

export interface ListMcpToolsOptions {
  /** Budget for starting the server plus each request, in milliseconds. */
  timeoutMs: number;
  /** Names of this process's environment variables the server also gets (`--env NAME`). */
  env?: readonly string[];
}

/**
 * The server's environment: the SDK's minimal default (HOME, LOGNAME, PATH, SHELL, TERM, USER),
 * plus exactly the variables the operator names. The server is code under test, not trusted with
 * what else the shell holds (SETTLE_CAP_KEYS, DATABASE_URL, model keys).
 */
export function serverEnvironment(names: readonly string[], env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new InputError('--env', `name an environment variable (letters, digits, _; got ${JSON.stringify(name)})`);
    const value = env[name];
    if (value === undefined) throw new InputError('--env', `name a variable that is set (${name} is not)`);
    picked[name] = value;
  }
  return picked;
}

/** `{ tools: [...] }`: every page of the server's `tools/list`, concatenated. */
export async function listMcpTools(commandLine: string, options: ListMcpToolsOptions): Promise<{ tools: unknown[] }> {
  const [command, ...args] = splitCommandLine(commandLine);
  if (command === undefined) throw new InputError('--mcp', 'be a command line that starts an MCP server, e.g. "npx mcp-server-x /dir"');
  // The SDK adds its minimal default environment to these.
  const env = serverEnvironment(options.env ?? []);
  const transport = new StdioClientTransport({ command, args, env, stderr: 'pipe' });
  // The SDK closes the transport on its own when initialize fails, without waiting for the
  // child (it sends SIGTERM only after 2 s, on an unref'd timer): keep the pid and make sure the
  // server is gone before returning, whatever happened.
  let serverPid: number | null = null;
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    serverPid = transport.pid;
  };
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-2000);
  });
  const client = new Client({ name: 'settle-lint', version: '0.1.0' });
  try {
    await client.connect(transport, { timeout: options.timeoutMs });
    const tools: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, ToolsPage, {
        timeout: options.timeoutMs,
      });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) return { tools };
    }
    throw new Error(`tools/list still returned a cursor after ${MAX_PAGES} pages`);
  } catch (err) {
    const reason = oneLine((err as Error).message);
    const said = oneLine(stderr).slice(-300);
    throw new InputError(
      '--mcp',
      `start an MCP server that answers initialize and tools/list on stdio (${JSON.stringify(commandLine)}: ${reason}${said ? `; its stderr: ${said}` : ''})`,
    );
  } finally {
    await client.close().catch(() => {});
    if (serverPid !== null) await stopProcess(serverPid);
  }
}

/** SIGTERM, then SIGKILL if the process is still there after 2 s. */
async function stopProcess(pid: number): Promise<void> {
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let waited = 0; waited < 2000 && alive(); waited += 50) await new Promise((r) => setTimeout(r, 50));
  if (alive()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone in the meantime
    }
  }
}

/**
 * Splits a command line into words the way a POSIX shell does for quoting ('…', "…", \x) and
 * nothing else: no variables, globs or pipes, so what runs is exactly the words given.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) word += line[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote !== null) throw new InputError('--mcp', `close its ${quote} quote`);
  if (inWord) words.push(word);
  return words;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
