/**
 * A tiny orders service that deduplicates by `Idempotency-Key`, as payment and order APIs do: the
 * effect under test. It counts what it applied (the effect, counted at the effect) apart from what
 * it received, and can hold a request after applying it (to kill the caller in between).
 *   POST /orders               applies the order once per key; a repeat answers the first order
 *   GET  /orders/by-key/<key>  the order under that key, or 404 (the tool's probe)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Order {
  order_id: string;
  item: string;
  quantity: number;
}

export interface OrderServer {
  url: string;
  /** Orders applied, by idempotency key. */
  applied: Map<string, Order>;
  /** Every POST received, with its key (repeats included). */
  posts: string[];
  /** Called after an order is applied and before the answer; while it runs, the answer waits. */
  afterApply: ((key: string) => Promise<void>) | null;
  close(): Promise<void>;
}

export async function startOrderServer(): Promise<OrderServer> {
  const state: OrderServer = { url: '', applied: new Map(), posts: [], afterApply: null, close: async () => {} };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => void answer(req, res, raw));
  });
  const answer = async (req: http.IncomingMessage, res: http.ServerResponse, raw: string) => {
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const byKey = req.url?.match(/^\/orders\/by-key\/([^/]+)$/);
    if (req.method === 'GET' && byKey) {
      const order = state.applied.get(decodeURIComponent(byKey[1]!));
      return order ? json(200, order) : json(404, { error: 'no order under this key' });
    }
    if (req.method !== 'POST' || req.url !== '/orders') return json(404, { error: `no route ${req.method} ${req.url}` });
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') return json(400, { error: 'Idempotency-Key header required' });
    state.posts.push(key);
    const earlier = state.applied.get(key);
    if (earlier) return json(200, earlier);
    const { item, quantity } = JSON.parse(raw) as { item: string; quantity: number };
    const order = { order_id: `order-${state.applied.size + 1}`, item, quantity };
    state.applied.set(key, order);
    if (state.afterApply) await state.afterApply(key);
    json(201, order);
  };
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return state;
}
