import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdempotentServer, type IdempotentServer } from './idempotent-http-server';

// The service the http_request tests count effects at must behave as Stripe's idempotent endpoints do.
describe('idempotent HTTP service', () => {
  let server: IdempotentServer;
  beforeAll(async () => {
    server = await startIdempotentServer();
  });
  afterAll(() => server.close());

  const post = (path: string, body: unknown, key?: string) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify(body),
    });

  it('stores the first response per key and replays it', async () => {
    const first = await post('/v1/invoices', { amount: 100 }, 'k-replay');
    const again = await post('/v1/invoices', { amount: 100 }, 'k-replay');
    expect(first.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
    expect(server.effects().filter((e) => e.key === 'k-replay')).toHaveLength(1);
  });

  it('refuses a key reused with other parameters', async () => {
    await post('/v1/invoices', { amount: 1 }, 'k-params');
    const other = await post('/v1/invoices', { amount: 2 }, 'k-params');
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: { type: string } }).error.type).toBe('idempotency_error');
    expect(server.effects().filter((e) => e.key === 'k-params')).toHaveLength(1);
  });

  it('answers 409 to a concurrent duplicate, and the held effect happened once', async () => {
    const held = server.hold();
    const first = post('/v1/invoices', { amount: 3 }, 'k-busy');
    await held.reached;
    const duplicate = await post('/v1/invoices', { amount: 3 }, 'k-busy');
    expect(duplicate.status).toBe(409);
    held.release();
    expect((await first).status).toBe(200);
    expect(server.effects().filter((e) => e.key === 'k-busy')).toHaveLength(1);
  });

  it('makes a new effect for every POST without a key, and reads objects back', async () => {
    const before = server.effects().length;
    const a = (await (await post('/v1/tickets', { title: 'x' })).json()) as { id: string };
    await post('/v1/tickets', { title: 'x' });
    expect(server.effects().length - before).toBe(2);
    const read = await fetch(`${server.url}/v1/tickets/${a.id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: a.id, title: 'x' });
    expect((await fetch(`${server.url}/v1/tickets/none`)).status).toBe(404);
  });
});
