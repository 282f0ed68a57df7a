/**
 * Egress for the `connect` right (issue 12, item 4) against real bubblewrap: a sandboxed command
 * reaches exactly the capability's `host:` objects (name and port) through the call's egress
 * proxy, and nothing else — not an ungranted host or port, not loopback or the worker's database
 * unless the operator allows that exact address and port, never by going around the proxy.
 *
 * There is no outside network on the test machine: the "allowed host" is a local HTTP server,
 * reachable only because the test, as the worker's operator, lists its loopback port in
 * SETTLE_EGRESS_ALLOW_INTERNAL.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { bashExecute } from '../../activities/tools/bash-execute';
import { runSettled } from '../../activities/settled/run-settled';
import { decideEgress, registerWorkerServiceUrl } from '../../activities/tools/egress-policy';
import { deriveKey } from '../../core/key';
import type { BashExecuteArgs } from '../../core/tools/bash-execute';
import { openTestDb, tempWorkspace, testStore, testWorkspaceRoot, uniqueId } from '../support/env';

const db = openTestDb(2);
const store = testStore(db);
let server: http.Server;
let port: number;
const seen: { url: string; host: string | undefined }[] = [];
const pgPort = Number(new URL(inject('databaseUrl')).port || 5432);

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', host: req.headers.host });
    res.end(`hello ${req.url}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await db.destroy();
});

const saved = process.env.SETTLE_EGRESS_ALLOW_INTERNAL;
afterEach(() => {
  if (saved === undefined) delete process.env.SETTLE_EGRESS_ALLOW_INTERNAL;
  else process.env.SETTLE_EGRESS_ALLOW_INTERNAL = saved;
});
/** As the worker's operator: these loopback address:port pairs may be reached. */
const allowInternal = (...pairs: string[]) => (process.env.SETTLE_EGRESS_ALLOW_INTERNAL = pairs.join(','));

async function run(command: string, grant: { network: boolean; egress?: string[] }) {
  const workspace = tempWorkspace('egress');
  const args: BashExecuteArgs = { command, timeout_ms: 60_000 };
  const env = { workspace, workspaceRoot: testWorkspaceRoot(), ...grant };
  const plan = await bashExecute.plan(args, env);
  if (plan.kind !== 'proceed') throw new Error('expected proceed');
  const obs = await bashExecute.execute(args, plan.intent, env, {
    key: uniqueId('egress'),
    generation: 1,
    assertLeaseHeld: () => {},
    ledger: store.runs,
  });
  return { obs, intent: plan.intent };
}

/**
 * One request, one line: `<status> <body>`. Plain HTTP through the proxy (flags ''): the
 * response's status; a CONNECT tunnel (flags '-p'): the proxy's answer to CONNECT.
 */
const curl = (flags: string, url: string) =>
  `rm -f /tmp/b; curl -sS -m 20 ${flags} -o /tmp/b -w '%{${flags.includes('-p') ? 'http_connect' : 'http_code'}} ' ${url} 2>/dev/null; cat /tmp/b 2>/dev/null; echo`;

describe('the connect right reaches exactly the granted host objects', () => {
  it('a granted name and port: plain HTTP through the proxy and a CONNECT tunnel both arrive; the intent records the grant', async () => {
    allowInternal(`127.0.0.1:${port}`);
    const before = seen.length;
    const grant = { network: true, egress: [`host:localhost:${port}`] };
    const { obs, intent } = await run(
      [curl('', `http://localhost:${port}/plain`), curl('-p', `http://localhost:${port}/tunnel`)].join('; '),
      grant,
    );
    expect(obs.output).toBe(`200 hello /plain\n\n200 hello /tunnel\n\n`);
    expect(seen.slice(before)).toEqual([
      { url: '/plain', host: `localhost:${port}` },
      { url: '/tunnel', host: `localhost:${port}` },
    ]);
    expect(intent).toMatchObject({ network: true, egress: [`host:localhost:${port}`] });
    expect(obs.error).toBeNull(); // nothing refused, nothing to say
  });

  it('an ungranted host, another port of the granted host, and a name without a port (80 and 443 only) are refused with the reason', async () => {
    allowInternal(`127.0.0.1:${port}`, `127.0.0.1:${pgPort}`);
    const before = seen.length;
    const { obs } = await run(
      [
        curl('', `http://other.example:${port}/`),
        curl('-p', `http://other.example:${port}/`),
        curl('', `http://localhost:${pgPort}/`),
        curl('', `http://127.0.0.1:${port}/`), // the address is not the granted name
      ].join('; '),
      { network: true, egress: [`host:localhost:${port + 1}`, 'host:localhost'] },
    );
    const lines = obs.output.split('\n').filter(Boolean);
    expect(lines[0]).toBe(
      `403 settle egress refused: other.example:${port} is not within the capability's host objects (host:localhost:${port + 1}, host:localhost)`,
    );
    expect(lines[1]).toBe('403 ');
    expect(lines[2]).toMatch(new RegExp(`^403 settle egress refused: localhost:${pgPort} is not within`));
    expect(lines[3]).toMatch(new RegExp(`^403 settle egress refused: 127.0.0.1:${port} is not within`));
    expect(seen.length).toBe(before);
  });

  it('a granted loopback target the operator did not allow is refused: the worker’s Postgres, even named in the capability', async () => {
    delete process.env.SETTLE_EGRESS_ALLOW_INTERNAL;
    const { obs } = await run([curl('', `http://localhost:${pgPort}/`), curl('-p', `http://127.0.0.1:${pgPort}/`)].join('; '), {
      network: true,
      egress: [`host:localhost:${pgPort}`, `host:127.0.0.1:${pgPort}`],
    });
    expect(obs.output).toMatch(
      new RegExp(
        `^403 settle egress refused: localhost:${pgPort} resolves only to refused addresses: .*is loopback \\(the worker's operator may allow .*SETTLE_EGRESS_ALLOW_INTERNAL\\)`,
      ),
    );
    expect(obs.output.split('\n')[2]).toBe('403 ');
    expect(obs.error).toMatch(/0 connection\(s\) allowed, 2 refused/);
  });

  it("the worker's own services are refused even when the operator allows their address and port", async () => {
    registerWorkerServiceUrl(inject('databaseUrl'), 5432); // as createSettleWorker does for its database
    allowInternal(`127.0.0.1:${pgPort}`, `[::1]:${pgPort}`);
    const { obs } = await run(curl('-p', `http://localhost:${pgPort}/`), { network: true, egress: [`host:localhost:${pgPort}`] });
    expect(obs.error).toMatch(new RegExp(`port ${pgPort} is the worker's own service`));
  });

  it('going around the proxy finds no route: not the granted server directly, not the host’s loopback, not any other address', async () => {
    allowInternal(`127.0.0.1:${port}`);
    const before = seen.length;
    const { obs } = await run(
      [
        `curl -sS -m 10 --noproxy '*' http://127.0.0.1:${port}/direct || echo direct-failed`,
        `(exec 3<>/dev/tcp/127.0.0.1/${pgPort}) 2>/dev/null || echo pg-failed`,
        `(exec 3<>/dev/tcp/10.0.0.1/80) 2>&1 | grep -m1 -o 'Network is unreachable'`,
        `(exec 3<>/dev/tcp/1.1.1.1/443) 2>&1 | grep -m1 -o 'Network is unreachable'`,
      ].join('; '),
      { network: true, egress: [`host:localhost:${port}`] },
    );
    expect(obs.output).toBe('direct-failed\npg-failed\nNetwork is unreachable\nNetwork is unreachable\n');
    expect(seen.length).toBe(before);
  });

  it('the proxy socket itself enforces the policy (a command that skips the forwarder gains nothing)', async () => {
    allowInternal(`127.0.0.1:${port}`);
    // Straight to the socket with the node binary bound for the forwarder, no forwarder involved.
    const raw = `const s = require('net').connect('/run/settle/egress.sock', () => s.write('CONNECT other.example:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')); s.pipe(process.stdout);`;
    const { obs } = await run(`/run/settle/node -e "${raw}"`, {
      network: true,
      egress: [`host:localhost:${port}`],
    });
    expect(obs.output).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n[^]*settle egress refused: other\.example:443 is not within/);
  });

  it('without the connect right: no proxy, no network', async () => {
    allowInternal(`127.0.0.1:${port}`);
    const { obs } = await run(`env | grep -ci proxy; curl -sS -m 10 http://localhost:${port}/ || echo no-network`, {
      network: false,
      egress: [`host:localhost:${port}`],
    });
    expect(obs.output).toBe('0\nno-network\n');
  });

  it('the connect right without host objects grants nothing, and says so', async () => {
    const { obs } = await run(`env | grep -ci proxy`, { network: true, egress: [] });
    expect(obs.output).toBe('0\n');
    expect(obs.error).toMatch(/the capability names no host: objects/);
  });

  it('an invalid operator setting refuses the call with no effect, naming the variable', async () => {
    process.env.SETTLE_EGRESS_ALLOW_INTERNAL = '127.0.0.0/8';
    const trajectoryId = uniqueId('egress');
    const args: BashExecuteArgs = { command: 'touch ran', timeout_ms: 10_000 };
    const call = {
      key: deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'bash_execute', args }),
      trajectoryId,
      turn: 0,
      callId: 'c',
      tool: 'bash_execute',
      args,
    };
    const workspace = tempWorkspace('egress');
    const outcome = await runSettled(
      store,
      bashExecute,
      call,
      { workspace, workspaceRoot: testWorkspaceRoot(), network: true, egress: ['host:example.com'] },
      { leaseMs: 10_000, holder: 'egress-test' },
    );
    expect(outcome).toMatchObject({
      kind: 'released',
      detail: expect.stringMatching(/SETTLE_EGRESS_ALLOW_INTERNAL\[0\] must be an address and port/),
    });
  });
});

describe('egress decisions (the proxy resolves names itself)', () => {
  const policy = (answers: string[], allow: string[] = []) => ({
    grants: ['host:example.com', 'host:api.example.net:8443', 'host:93.184.215.14:443'],
    allowInternal: new Set(allow.map((a) => a.replace(/^\[?([^\]]+)\]?:(\d+)$/, '$1#$2'))),
    lookup: async () => answers.map((address) => ({ address })),
  });

  it.each([
    ['a public address of a granted name', 'www.example.com:443', ['93.184.215.14'], true],
    ['a granted IPv4 address', '93.184.215.14:443', ['93.184.215.14'], true],
    ['a name that resolves to loopback (DNS rebinding)', 'example.com:443', ['127.0.0.1'], false],
    ['an IPv4-mapped loopback', 'example.com:443', ['::ffff:127.0.0.1'], false],
    ['IPv6 loopback', 'example.com:443', ['::1'], false],
    ['the cloud metadata address (link-local)', 'example.com:80', ['169.254.169.254'], false],
    ['a private address', 'example.com:443', ['10.1.2.3'], false],
    ['a unique-local IPv6 address', 'example.com:443', ['fd00::1'], false],
    ['NAT64 of a private address', 'example.com:443', ['64:ff9b::a01:203'], false],
    ['IPv4-compatible loopback', 'example.com:443', ['::127.0.0.1'], false],
    ['IPv4-mapped, even of a public address', 'example.com:443', ['::ffff:93.184.215.14'], false],
    ['IPv4-translated loopback (SIIT)', 'example.com:443', ['::ffff:0:7f00:1'], false],
    ['local-use NAT64 of loopback', 'example.com:443', ['64:ff9b:1::7f00:1'], false],
    ['site-local IPv6 (deprecated, still routed inside sites)', 'example.com:443', ['fec0::1'], false],
    ['discard-only IPv6', 'example.com:443', ['100::1'], false],
    ['Teredo (embeds an IPv4 address)', 'example.com:443', ['2001:0:4136:e378:8000:63bf:3fff:fdd2'], false],
    ['unspecified 0.0.0.0', 'example.com:443', ['0.0.0.0'], false],
    ['a refused address before a public one: the public one is used', 'example.com:443', ['127.0.0.1', '93.184.215.14'], true],
    ['a port the object does not name', 'example.com:22', ['93.184.215.14'], false],
    ['the default ports of a port-specific object', 'api.example.net:443', ['93.184.215.14'], false],
    ['a suffix that is not a subdomain', 'badexample.com:443', ['93.184.215.14'], false],
    ['a suffix of an IPv4 object', '1.93.184.215.14:443', ['93.184.215.14'], false],
    ['an IPv6 literal (not grantable)', '[2606:2800::1]:443', ['2606:2800::1'], false],
    ['an octal spelling of an address', '0177.0.0.1:443', ['127.0.0.1'], false],
    ['a name with a trailing dot', 'example.com.:443', ['93.184.215.14'], false],
    ['no port', 'example.com', ['93.184.215.14'], false],
  ])('%s', async (_name, authority, answers, allowed) => {
    const d = await decideEgress(authority, policy(answers));
    expect(d.allowed).toBe(allowed);
    if (d.allowed) expect(d.address).toBe('93.184.215.14');
  });

  it('an internal address only as the exact address:port the operator listed', async () => {
    expect((await decideEgress('example.com:443', policy(['10.1.2.3'], ['10.1.2.3:443']))).allowed).toBe(true);
    expect((await decideEgress('example.com:80', policy(['10.1.2.3'], ['10.1.2.3:443']))).allowed).toBe(false);
    expect((await decideEgress('example.com:443', policy(['fd00::1'], ['[fd00::1]:443']))).allowed).toBe(true);
  });
});
