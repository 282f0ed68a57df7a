/**
 * `http_request` against a real HTTP service that behaves like Stripe's idempotent endpoints
 * (test/support/idempotent-http-server.ts), through the settled runtime and a real endpoint store:
 * the derived key reaches the service as Idempotency-Key; nothing is sent to a host the capability
 * does not grant or to an internal address the operator did not allow; a concurrent duplicate
 * (409) leaves the call in doubt and the probe's repeat settles it; a key reused with other
 * parameters is the endpoint's final answer. Killing the worker mid-call: http-request-kill.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runSettled } from '../../activities/settled/run-settled';
import { NoEffect } from '../../activities/settled/settled-tool';
import { settledToolOf } from '../../activities/tools/team-tool';
import { httpRequest, type HttpResponse } from '../../activities/tools/http-request';
import { authorizationFor } from '../../activities/tools/http-credentials';
import { deriveKey } from '../../core/key';
import { httpRequestArgs, type HttpRequestArgs } from '../../core/tools/http-request';
import { startIdempotentServer, type IdempotentServer } from '../support/idempotent-http-server';
import { openTestDb, tempWorkspace, testStore, uniqueId } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
const tool = settledToolOf(httpRequest);
let service: IdempotentServer;

beforeAll(async () => {
  service = await startIdempotentServer();
});
afterAll(async () => {
  await service.close();
  await db.destroy();
});

const saved = { allow: process.env.SETTLE_EGRESS_ALLOW_INTERNAL, auth: process.env.SETTLE_HTTP_AUTHORIZATION };
afterEach(() => {
  for (const [name, value] of [
    ['SETTLE_EGRESS_ALLOW_INTERNAL', saved.allow],
    ['SETTLE_HTTP_AUTHORIZATION', saved.auth],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});
/** As the worker's operator: the service's loopback address and port may be reached. */
const allowService = () => (process.env.SETTLE_EGRESS_ALLOW_INTERNAL = `127.0.0.1:${service.port}`);

const grant = () => ({ workspace: tempWorkspace('http'), network: true, egress: [`host:127.0.0.1:${service.port}`] });
const charge = (amount: number, extra: Partial<HttpRequestArgs> = {}): HttpRequestArgs =>
  httpRequestArgs().parse({ method: 'POST', url: `${service.url}/v1/charges`, body: JSON.stringify({ amount }), ...extra });

/** One call through the settled runtime, as the executeToolCall activity runs it. */
async function call(args: HttpRequestArgs, env = grant(), callId = 'c1') {
  const trajectoryId = uniqueId('http');
  const key = deriveKey({ trajectoryId, turn: 0, callId, tool: 'http_request', args });
  const outcome = await runSettled(store, tool, { key, trajectoryId, turn: 0, callId, tool: 'http_request', args }, env, {
    leaseMs: 5_000,
    holder: 'test',
  });
  return { key, outcome, record: await store.get(key) };
}

const resultOf = (outcome: { kind: string; result?: unknown }): HttpResponse => {
  if (outcome.kind !== 'completed') throw new Error(`expected completed, got ${JSON.stringify(outcome)}`);
  return JSON.parse((outcome.result as { output: string }).output) as HttpResponse;
};

describe('http_request sends settle’s key downstream', () => {
  it('the derived key arrives as Idempotency-Key; the call completes with the status, selected headers and JSON body', async () => {
    allowService();
    const before = service.effects().length;
    const { key, outcome, record } = await call(charge(100));
    const effects = service.effects().slice(before);
    expect(effects).toEqual([{ id: expect.any(String), collection: 'charges', key, body: { amount: 100 } }]);
    expect(resultOf(outcome)).toEqual({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: { id: effects[0]!.id, object: 'charge', amount: 100 },
    });
    expect(record).toMatchObject({ state: 'COMPLETED', intent: { grant: `host:127.0.0.1:${service.port}` } });
  });

  it('a host the capability does not grant: refused at plan, nothing claimed as executed, no request sent', async () => {
    allowService();
    const before = service.requests().length;
    const other = { ...grant(), egress: [`host:127.0.0.1:${service.port + 1}`, 'host:api.example.com'] };
    const { outcome, record } = await call(charge(1), other);
    expect(outcome).toMatchObject({ kind: 'released' });
    expect(record?.state).toBe('NOT_EXECUTED');
    expect(record?.detail).toMatch(`127.0.0.1:${service.port} is not within the capability's host objects`);
    // No connect right at all: nothing is reachable.
    const none = await call(charge(1), { ...grant(), network: false });
    expect(none.record?.detail).toMatch(/needs a capability with the connect right/);
    expect(service.requests().length).toBe(before);
  });

  it('an internal address the operator did not allow: refused by the egress rules before any byte is sent', async () => {
    delete process.env.SETTLE_EGRESS_ALLOW_INTERNAL;
    const before = service.requests().length;
    const { outcome, record } = await call(charge(2));
    expect(outcome).toMatchObject({ kind: 'released' });
    expect(record?.detail).toMatch(
      new RegExp(
        `settle egress refused: .*127\\.0\\.0\\.1 is loopback \\(the worker's operator may allow 127\\.0\\.0\\.1:${service.port} in SETTLE_EGRESS_ALLOW_INTERNAL\\)`,
      ),
    );
    expect(service.requests().length).toBe(before);
  });

  it('plain http to a public address: refused before connecting (https only)', async () => {
    const args = httpRequestArgs().parse({ method: 'POST', url: 'http://93.184.216.34/v1/charges', body: '{}' });
    const { outcome, record } = await call(args, { ...grant(), egress: ['host:93.184.216.34'] });
    expect(outcome).toMatchObject({ kind: 'released' });
    expect(record?.detail).toMatch(/93\.184\.216\.34 is a public address: http_request sends over https only/);
  });

  it('nobody listening: connection refused is certain no-effect (released)', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    process.env.SETTLE_EGRESS_ALLOW_INTERNAL = `127.0.0.1:${port}`;
    const args = httpRequestArgs().parse({ method: 'POST', url: `http://127.0.0.1:${port}/v1/charges`, body: '{}' });
    const { outcome, record } = await call(args, { ...grant(), egress: [`host:127.0.0.1:${port}`] });
    expect(outcome).toMatchObject({ kind: 'released' });
    expect(record?.detail).toMatch(/could not connect to 127\.0\.0\.1:\d+ .*nothing sent: .*ECONNREFUSED/);
  });
});

describe('in doubt, settled by the endpoint’s deduplication', () => {
  it('a concurrent duplicate (409) leaves the call in doubt; the probe’s repeat is unknown while the first runs, then applied with the stored answer; one effect', async () => {
    allowService();
    const args = charge(300);
    const key = uniqueId('k');
    const intent = { grant: `host:127.0.0.1:${service.port}` };
    const ctx = (generation: number) => ({ key, generation, assertLeaseHeld: () => {} });
    const before = service.effects().length;
    const held = service.hold();
    const first = tool.execute(args, intent, grant(), ctx(1));
    await held.reached;
    // A second execution of the same key while the first is parked between its effect and its answer.
    const second = tool.execute(args, intent, grant(), ctx(2));
    await expect(second).rejects.toThrow(/answered 409, no final answer for this key yet: .*still being processed/);
    await expect(second).rejects.not.toBeInstanceOf(NoEffect);
    expect(await tool.probe(args, intent, grant(), { key, generation: 2 })).toMatchObject({
      verdict: 'unknown',
      detail: expect.stringMatching(/^the repeated request answered 409/),
    });
    held.release();
    const answered = JSON.parse((await first).output) as HttpResponse;
    const probed = await tool.probe(args, intent, grant(), { key, generation: 2 });
    expect(probed).toMatchObject({ verdict: 'applied', detail: expect.stringMatching(/: 200 \(the stored answer, replayed\)$/) });
    expect(probed.verdict === 'applied' && JSON.parse(probed.result.output)).toEqual({
      ...answered,
      headers: { ...answered.headers, 'idempotent-replayed': 'true' },
    });
    expect(
      service
        .effects()
        .slice(before)
        .map((e) => e.key),
    ).toEqual([key]);
  });

  it('the first request never arrived: the probe’s repeat is the one effect, and settles the call applied', async () => {
    allowService();
    const args = charge(400);
    const key = uniqueId('k');
    const before = service.effects().length;
    const probed = await tool.probe(args, { grant: `host:127.0.0.1:${service.port}` }, grant(), { key, generation: 1 });
    expect(probed).toMatchObject({ verdict: 'applied', detail: expect.stringMatching(/: 200 \(not marked as a replay\)$/) });
    expect(service.effects().slice(before)).toMatchObject([{ key, body: { amount: 400 } }]);
  });

  it('a key reused with other parameters: the endpoint’s 400 is its final answer, recorded as the call’s result; no second effect', async () => {
    allowService();
    const key = uniqueId('k');
    const intent = { grant: `host:127.0.0.1:${service.port}` };
    const before = service.effects().length;
    await tool.execute(charge(500), intent, grant(), { key, generation: 1, assertLeaseHeld: () => {} });
    const reused = JSON.parse((await tool.execute(charge(501), intent, grant(), { key, generation: 1, assertLeaseHeld: () => {} })).output);
    expect(reused).toMatchObject({ status: 400, body: { error: { type: 'idempotency_error' } } });
    expect(
      service
        .effects()
        .slice(before)
        .map((e) => e.body),
    ).toEqual([{ amount: 500 }]);
  });

  it('with status_url the probe reads it: 2xx applied, 404 not applied, and sends nothing that changes state', async () => {
    allowService();
    const intent = { grant: `host:127.0.0.1:${service.port}` };
    const created = resultOf((await call(charge(600))).outcome).body as { id: string };
    const before = service.effects().length;
    const at = { key: uniqueId('k'), generation: 1 };
    const found = await tool.probe(charge(600, { status_url: `${service.url}/v1/charges/${created.id}` }), intent, grant(), at);
    expect(found).toMatchObject({ verdict: 'applied', detail: 'the status URL answered 200' });
    const missing = await tool.probe(charge(600, { status_url: `${service.url}/v1/charges/ch_none` }), intent, grant(), at);
    expect(missing).toMatchObject({ verdict: 'not_applied' });
    expect(service.effects().length).toBe(before);
    expect(
      service
        .requests()
        .slice(-2)
        .map((r) => [r.method, r.key]),
    ).toEqual([
      ['GET', null],
      ['GET', null],
    ]);
  });
});

describe('credentials come from the worker’s operator, never from arguments', () => {
  it('an entry names its scheme: host[:port] is https only (443), http://host[:port] plain http only (80)', () => {
    const env = {
      SETTLE_HTTP_AUTHORIZATION: 'api.example.com=TLS_AUTH, http://10.0.0.5=PLAIN_AUTH',
      TLS_AUTH: 'Bearer a',
      PLAIN_AUTH: 'Bearer b',
    };
    expect(authorizationFor('https', 'api.example.com', 443, env)).toBe('Bearer a');
    expect(authorizationFor('http', '10.0.0.5', 80, env)).toBe('Bearer b');
    expect(authorizationFor('https', '10.0.0.5', 80, env)).toBeNull();
    expect(authorizationFor('http', '10.0.0.5', 8080, env)).toBeNull();
    expect(() => authorizationFor('http', 'api.example.com', 443, env)).toThrow(
      'SETTLE_HTTP_AUTHORIZATION[0] must be spelled http://api.example.com:443=TLS_AUTH to send TLS_AUTH over plain http (it is sent over https only)',
    );
    expect(() => authorizationFor('https', 'x.example', 443, { SETTLE_HTTP_AUTHORIZATION: 'ftp://x.example=V' })).toThrow(
      'SETTLE_HTTP_AUTHORIZATION[0] must be host[:port]=VARIABLE or http://host[:port]=VARIABLE (got "ftp://x.example=V")',
    );
  });

  it('SETTLE_HTTP_AUTHORIZATION adds Authorization for exactly its host and port; the schema refuses the header from a call', async () => {
    const seen: (string | undefined)[] = [];
    const echo = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.end('{}');
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const port = (echo.address() as AddressInfo).port;
    try {
      process.env.SETTLE_EGRESS_ALLOW_INTERNAL = `127.0.0.1:${port},127.0.0.1:${service.port}`;
      process.env.TEST_HTTP_TOKEN = 'Bearer sk_test_1';
      const args = httpRequestArgs().parse({ method: 'POST', url: `http://127.0.0.1:${port}/x`, body: '{}' });
      const egress = { ...grant(), egress: [`host:127.0.0.1:${port}`] };
      // An entry without a scheme is for https only: over plain http the call is refused before
      // anything is sent, naming the entry and the spelling that allows it.
      process.env.SETTLE_HTTP_AUTHORIZATION = `127.0.0.1:${port}=TEST_HTTP_TOKEN`;
      const httpsOnly = await call(args, egress);
      expect(httpsOnly.outcome).toMatchObject({ kind: 'released' });
      expect(httpsOnly.record?.detail).toBe(
        `NoEffect: nothing sent: SETTLE_HTTP_AUTHORIZATION[0] must be spelled http://127.0.0.1:${port}=TEST_HTTP_TOKEN to send TEST_HTTP_TOKEN over plain http (it is sent over https only)`,
      );
      expect(seen).toEqual([]);
      // The operator's explicit http:// entry: sent over plain http to exactly that host and port.
      process.env.SETTLE_HTTP_AUTHORIZATION = `http://127.0.0.1:${port}=TEST_HTTP_TOKEN`;
      await call(args, egress);
      expect(seen).toEqual(['Bearer sk_test_1']);
      // A named variable that is unset: the call fails before anything is sent, released (not in doubt).
      delete process.env.TEST_HTTP_TOKEN;
      const unset = await call(args, egress);
      expect(unset.outcome).toMatchObject({ kind: 'released' });
      expect(unset.record?.detail).toMatch(/nothing sent: SETTLE_HTTP_AUTHORIZATION\[0\] must name a set variable/);
      expect(seen).toHaveLength(1);
      expect(() =>
        httpRequestArgs().parse({ method: 'POST', url: `http://127.0.0.1:${port}/x`, headers: [{ name: 'Authorization', value: 'x' }] }),
      ).toThrow(/Accept-Language/);
    } finally {
      delete process.env.TEST_HTTP_TOKEN;
      await new Promise<void>((r) => echo.close(() => r()));
    }
  });
});
