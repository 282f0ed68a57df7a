/**
 * A local HTTP server speaking the OpenAI chat-completions protocol (POST /v1/chat/completions),
 * answering from a script: the stand-in for a language model, which cannot run here. It records
 * every request so tests can check what the trajectory sent back to the "model".
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedReply {
  content?: string | null;
  tool_calls?: { id: string; name: string; arguments: string }[];
  total_tokens?: number;
}

export interface ChatServer {
  baseUrl: string;
  requests: { headers: http.IncomingHttpHeaders; body: any }[];
  close(): Promise<void>;
}

export async function startChatServer(script: ScriptedReply[]): Promise<ChatServer> {
  const requests: ChatServer['requests'] = [];
  let next = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404).end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const body = JSON.parse(raw);
      requests.push({ headers: req.headers, body });
      const reply = script[next++];
      if (!reply) {
        res.writeHead(500).end(JSON.stringify({ error: { message: 'script exhausted' } }));
        return;
      }
      const message = {
        role: 'assistant',
        content: reply.content ?? null,
        ...(reply.tool_calls
          ? {
              tool_calls: reply.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
            }
          : {}),
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${next}`,
          object: 'chat.completion',
          model: body.model,
          choices: [{ index: 0, message, finish_reason: reply.tool_calls ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: reply.total_tokens ?? 100 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise((r) => server.close(() => r())) };
}
