/**
 * `http_request` (A1, docs/http-request.md): one state-changing HTTP request, defined through
 * `defineTool` like any team's tool. settle's derived key goes downstream as `Idempotency-Key`, so
 * the endpoint — not settle — makes a repeated request harmless; that is what lets the probe
 * settle a call in doubt by sending the same request with the same key again.
 *
 * Reach: only the capability's `host:` objects (the grant is recorded in the intent at plan time,
 * from the verified capability), through the egress rules the sandbox uses: the name is resolved
 * here, internal addresses are refused unless the operator allows that exact pair, and the socket
 * goes to the address that was checked, so a second resolution cannot switch it.
 */
import http from 'node:http';
import https from 'node:https';
import { defineTool } from './team-tool';
import { NoEffect } from '../settled/settled-tool';
import { allowedInternal, decideEgress, internalAddress } from './egress-policy';
import { authorizationFor } from './http-credentials';
import { objectContains } from '../../core/capability/rules';
import { errorMessage } from '../../core/errors';
import type { ProbeVerdict } from '../../core/records';
import { HTTP_REQUEST, httpRequestArgs, httpTarget, type HttpRequestArgs, type HttpTarget } from '../../core/tools/http-request';

/** One request's whole time: connect, send, and the response read. */
export const HTTP_TIMEOUT_MS = 30_000;
/** Response bytes kept; the rest is not read (`truncated`). */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** Response headers returned: what a caller needs to read a result, nothing that sets state (cookies). */
const RESPONSE_HEADERS = ['content-type', 'location', 'idempotent-replayed', 'request-id', 'retry-after'] as const;

/** What the call returns, and what settle records as its result. */
export interface HttpResponse {
  status: number;
  headers: Partial<Record<(typeof RESPONSE_HEADERS)[number], string>>;
  /** Parsed JSON when the response is complete JSON; otherwise its text. */
  body: unknown;
  /** The response was longer than MAX_RESPONSE_BYTES: the body is its beginning, as text. */
  truncated?: true;
}

/** Recorded before the effect: the capability's `host:` object that grants the URL's host and port. */
export interface HttpRequestIntent {
  grant: string;
}

/**
 * Statuses that are no final answer for the key: 409 (a request with this key is still being
 * processed), 429 (not taken now), and a 5xx the endpoint does not mark as a replay of a stored
 * answer (a gateway may have timed out while the request went on). The call stays in doubt; the
 * probe asks again with the same key later.
 */
export function isFinalAnswer(response: HttpResponse): boolean {
  if (response.status === 409 || response.status === 429) return false;
  if (response.status >= 500) return response.headers['idempotent-replayed'] === 'true';
  return true;
}

export const httpRequest = defineTool({
  name: HTTP_REQUEST,
  description: httpRequestArgs().description ?? HTTP_REQUEST,
  args: httpRequestArgs(),
  level: 'A1',

  // Read-only: which host object grants this URL. Without one nothing is claimed (the call is released).
  async plan(args, ctx): Promise<HttpRequestIntent> {
    const { host, port } = httpTarget(args.url);
    const grants = ctx.network ? (ctx.egress ?? []) : [];
    const grant = grants.find((g) => objectContains(g, { kind: 'host', host, port }));
    if (!grant) {
      throw new NoEffect(
        `${host}:${port} is not within the capability's host objects (${grants.join(', ') || 'none: http_request needs a capability with the connect right and host: objects'})`,
      );
    }
    return { grant };
  },

  async execute(args, ctx): Promise<HttpResponse> {
    const response = await send(args, args.url, args.method, ctx.intent, ctx.key, () => ctx.assertLeaseHeld());
    if (!isFinalAnswer(response)) {
      // Not NoEffect: the endpoint may be running the first request with this key right now.
      throw new Error(`${args.method} ${args.url} answered ${response.status}, no final answer for this key yet: ${brief(response)}`);
    }
    return response;
  },

  async probe(args, intent, ctx): Promise<ProbeVerdict<HttpResponse>> {
    if (args.status_url !== undefined) return readStatus(args, args.status_url, intent);
    let response: HttpResponse;
    try {
      response = await send(args, args.url, args.method, intent, ctx.key, () => undefined);
    } catch (err) {
      return { verdict: 'unknown', detail: `repeating the request with the same Idempotency-Key failed: ${errorMessage(err)}` };
    }
    if (!isFinalAnswer(response)) {
      return { verdict: 'unknown', detail: `the repeated request answered ${response.status}, no final answer yet: ${brief(response)}` };
    }
    const replayed = response.headers['idempotent-replayed'] === 'true' ? 'the stored answer, replayed' : 'not marked as a replay';
    return {
      verdict: 'applied',
      result: response,
      detail: `the endpoint answered the request repeated with the same Idempotency-Key: ${response.status} (${replayed})`,
    };
  },
});

/** The probe through the call's status URL: 2xx applied, 404/410 not applied, anything else unknown. */
async function readStatus(args: HttpRequestArgs, url: string, intent: HttpRequestIntent): Promise<ProbeVerdict<HttpResponse>> {
  let response: HttpResponse;
  try {
    response = await send({ ...args, body: undefined }, url, 'GET', intent, null, () => undefined);
  } catch (err) {
    return { verdict: 'unknown', detail: `reading the status URL failed: ${errorMessage(err)}` };
  }
  if (response.status >= 200 && response.status < 300) {
    return { verdict: 'applied', result: response, detail: `the status URL answered ${response.status}` };
  }
  if (response.status === 404 || response.status === 410) {
    return { verdict: 'not_applied', detail: `the status URL answered ${response.status}: the request took no effect` };
  }
  return { verdict: 'unknown', detail: `the status URL answered ${response.status}: ${brief(response)}` };
}

/**
 * Sends one request to `url` under the recorded grant. Throws NoEffect when nothing was sent
 * (refused by the egress rules, unresolvable, or the connection failed before it was open), and
 * any other error when the request may have reached the endpoint.
 */
async function send(
  args: Pick<HttpRequestArgs, 'body' | 'headers'>,
  url: string,
  method: string,
  intent: HttpRequestIntent,
  key: string | null,
  beforeSending: () => void,
): Promise<HttpResponse> {
  const { target, address, headers } = await beforeAnyByte(() => prepare(args, url, method, intent, key));
  beforeSending(); // the lease, immediately before the effect
  return exchange(target, address, method, headers, method === 'GET' ? undefined : args.body);
}

/** Everything up to the connection sends nothing: whatever fails there (a bad operator setting too) is NoEffect. */
async function beforeAnyByte<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw err instanceof NoEffect ? err : new NoEffect(`nothing sent: ${errorMessage(err)}`);
  }
}

/** The target checked against the grant and the egress rules, the address to connect to, and the headers. */
async function prepare(
  args: Pick<HttpRequestArgs, 'body' | 'headers'>,
  url: string,
  method: string,
  intent: HttpRequestIntent,
  key: string | null,
): Promise<{ target: HttpTarget; address: string; headers: Record<string, string> }> {
  const target = httpTarget(url);
  const decision = await decideEgress(`${target.host}:${target.port}`, { grants: [intent.grant], allowInternal: allowedInternal() });
  if (!decision.allowed) throw new NoEffect(`settle egress refused: ${decision.reason}`);
  if (target.scheme === 'http' && !internalAddress(decision.address)) {
    throw new NoEffect(
      `${target.host} is a public address: http_request sends over https only (http only to an address the operator allows)`,
    );
  }
  const headers: Record<string, string> = {
    host: target.port === (target.scheme === 'https' ? 443 : 80) ? target.host : `${target.host}:${target.port}`,
    accept: 'application/json',
    'user-agent': 'settle-http-request',
  };
  for (const h of args.headers ?? []) headers[h.name.toLowerCase()] = h.value;
  if (key !== null) headers['idempotency-key'] = key;
  if (args.body !== undefined && method !== 'GET') headers['content-type'] = 'application/json';
  const authorization = authorizationFor(target.scheme, target.host, target.port);
  if (authorization) headers.authorization = authorization;
  return { target, address: decision.address, headers };
}

function exchange(
  target: HttpTarget,
  address: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const secure = target.scheme === 'https';
    let opened = false;
    const options: https.RequestOptions = {
      // The checked address, never the name again; Host and SNI carry the name.
      host: address,
      port: target.port,
      path: target.path,
      method,
      headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      agent: false, // a fresh socket: `opened` below is this request's own connection
      ...(secure && !/^[0-9.]+$/.test(target.host) ? { servername: target.host } : {}),
    };
    const req = (secure ? https : http).request(options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      res.on('data', (chunk: Buffer) => {
        if (truncated) return;
        const room = MAX_RESPONSE_BYTES - size;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          size = MAX_RESPONSE_BYTES;
          truncated = true;
          finish();
          res.destroy();
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', finish);
      res.on('error', (err) => fail(err));
      let finished = false;
      function finish() {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        const selected: HttpResponse['headers'] = {};
        for (const name of RESPONSE_HEADERS) {
          const value = res.headers[name];
          if (typeof value === 'string') selected[name] = value.slice(0, 512);
        }
        resolve({
          status: res.statusCode ?? 0,
          headers: selected,
          body: truncated ? text : parsed(text),
          ...(truncated ? { truncated } : {}),
        });
      }
    });
    const timer = setTimeout(() => req.destroy(new Error(`no complete response within ${HTTP_TIMEOUT_MS} ms`)), HTTP_TIMEOUT_MS);
    req.on('socket', (socket) => socket.once(secure ? 'secureConnect' : 'connect', () => (opened = true)));
    const fail = (err: Error) => {
      clearTimeout(timer);
      // Before the connection was open, not one byte of the request left this process.
      reject(opened ? err : new NoEffect(`could not connect to ${target.host}:${target.port} (${address}), nothing sent: ${err.message}`));
    };
    req.on('error', fail);
    req.end(body);
  });
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function brief(response: HttpResponse): string {
  const text = typeof response.body === 'string' ? response.body : JSON.stringify(response.body);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
