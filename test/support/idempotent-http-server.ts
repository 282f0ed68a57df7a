/**
 * An HTTP service that behaves like Stripe's idempotent endpoints, for tests that count effects
 * where they land: `POST /v1/<collection>` creates an object (one effect, logged), and with an
 * `Idempotency-Key` header
 *
 *   - the first request with a key performs the effect and stores its response;
 *   - the same key with the same parameters replays the stored response (`Idempotent-Replayed: true`);
 *   - the same key while its first request is still running answers 409 (a concurrent duplicate);
 *   - the same key with other parameters (method, path or body) answers 400 `idempotency_error`.
 *
 * Without a key every POST is a new effect, as on Stripe. `GET /v1/<collection>/<id>` reads an
 * object back (a status URL). `hold()` parks the next effect between the effect and its response,
 * so a test can kill the caller while the effect has happened and its answer has not arrived.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One effect as it landed: what a test counts. */
export interface Effect {
  id: string;
  collection: string;
  key: string | null;
  body: unknown;
}

/** A parked request: the effect has happened; `release()` lets its response go. */
export interface Held {
  /** Resolves when a request reached the hold (its effect is logged). */
  reached: Promise<Effect>;
  release(): void;
}

export interface IdempotentServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Every effect, in order (a duplicate shows as two entries with the same key). */
  effects(): readonly Effect[];
  /** Every request received, in order (method, path, key, status answered). */
  requests(): readonly { method: string; path: string; key: string | null; status: number }[];
  /** Parks the next effectful request after its effect, before its response. */
  hold(): Held;
  close(): Promise<void>;
}

type Stored = { state: 'running'; fingerprint: string } | { state: 'done'; fingerprint: string; status: number; body: string };

const COLLECTION_PATH = /^\/v1\/([a-z_]{1,40})$/;
const OBJECT_PATH = /^\/v1\/([a-z_]{1,40})\/([A-Za-z0-9_]{1,64})$/;
const MAX_BODY_BYTES = 64 * 1024;

export async function startIdempotentServer(): Promise<IdempotentServer> {
  const effects: Effect[] = [];
  const requests: { method: string; path: string; key: string | null; status: number }[] = [];
  const objects = new Map<string, Record<string, unknown>>();
  const byKey = new Map<string, Stored>();
  const holds: { reached: (e: Effect) => void; released: Promise<void> }[] = [];
  let next = 1;

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => answer(req, res, null, 500, { error: { type: 'api_error', message: String(err) } }));
  });

  function answer(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    key: string | null,
    status: number,
    body: unknown,
    replayed = false,
  ) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    requests.push({ method: req.method ?? '', path: req.url ?? '', key, status });
    res.writeHead(status, { 'content-type': 'application/json', ...(replayed ? { 'idempotent-replayed': 'true' } : {}) });
    res.end(text);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0]!;
    const keyHeader = req.headers['idempotency-key'];
    const key = typeof keyHeader === 'string' && keyHeader.length > 0 ? keyHeader : null;
    const raw = await readBody(req);
    if (req.method === 'GET') {
      const m = OBJECT_PATH.exec(path);
      const object = m ? objects.get(`${m[1]}/${m[2]}`) : undefined;
      return object
        ? answer(req, res, key, 200, object)
        : answer(req, res, key, 404, { error: { type: 'invalid_request_error', message: `no such object: ${path}` } });
    }
    const m = COLLECTION_PATH.exec(path);
    if (req.method !== 'POST' || !m) {
      return answer(req, res, key, 404, { error: { type: 'invalid_request_error', message: `unknown route: ${req.method} ${path}` } });
    }
    let params: unknown;
    try {
      params = raw.length === 0 ? {} : JSON.parse(raw);
    } catch {
      return answer(req, res, key, 400, { error: { type: 'invalid_request_error', message: 'the body must be JSON' } });
    }
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      return answer(req, res, key, 400, { error: { type: 'invalid_request_error', message: 'the body must be a JSON object' } });
    }
    const fingerprint = `${req.method} ${path} ${raw}`;
    if (key !== null) {
      const stored = byKey.get(key);
      if (stored && stored.fingerprint !== fingerprint) {
        return answer(req, res, key, 400, {
          error: {
            type: 'idempotency_error',
            message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
          },
        });
      }
      if (stored?.state === 'running') {
        return answer(req, res, key, 409, {
          error: { type: 'idempotency_error', message: 'A request with this idempotency key is still being processed.' },
        });
      }
      if (stored?.state === 'done') return answer(req, res, key, stored.status, stored.body, true);
      byKey.set(key, { state: 'running', fingerprint });
    }
    const collection = m[1]!;
    const id = `${collection.replace(/s$/, '').slice(0, 3)}_${String(next++).padStart(6, '0')}`;
    const object = { id, object: collection.replace(/s$/, ''), ...(params as Record<string, unknown>) };
    objects.set(`${collection}/${id}`, object);
    const effect: Effect = { id, collection, key, body: params };
    effects.push(effect);
    const hold = holds.shift();
    if (hold) {
      hold.reached(effect);
      await hold.released;
    }
    const body = JSON.stringify(object);
    // The response is stored whether or not the caller is still there to read it.
    if (key !== null) byKey.set(key, { state: 'done', fingerprint, status: 200, body });
    answer(req, res, key, 200, body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    effects: () => effects,
    requests: () => requests,
    hold() {
      let reached!: (e: Effect) => void;
      let release!: () => void;
      const reachedP = new Promise<Effect>((r) => (reached = r));
      const released = new Promise<void>((r) => (release = r));
      holds.push({ reached, released });
      return { reached: reachedP, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const h of holds.splice(0)) h.reached = () => undefined;
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
