/**
 * The capability attack corpus (docs/design.md#capabilities): every case denied with the right component, the
 * legitimate ones allowed. Real files (symlinks), real Postgres (budgets).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorize } from '../../activities/capability/authorize';
import { attenuate } from '../../activities/capability/attenuate';
import { BudgetStore } from '../../activities/capability/budget-store';
import { sign } from '../../activities/capability/signer';
import type { KeyRing } from '../../activities/capability/keyring';
import { loadKeyRing } from '../../activities/capability/keyring';
import type { AccessRequest, ChildRequest, Target } from '../../core/capability/rules';
import { tokenDigest, type CapabilityToken } from '../../core/capability/token';
import { openTestDb, tempWorkspace, testKeyRing, uniqueId } from '../support/env';

const db = openTestDb(4);
const budgets = new BudgetStore(db);
afterAll(() => db.destroy());

let ring: KeyRing;
let ws: string;
let outside: string;
const HOUR = 3_600_000;

beforeAll(() => {
  ring = testKeyRing();
  ws = tempWorkspace('cap');
  outside = tempWorkspace('outside');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  fs.mkdirSync(path.join(ws, 'src'));
  fs.writeFileSync(path.join(ws, 'src', 'a.ts'), 'a');
  fs.mkdirSync(path.join(ws, 'café'));
  fs.symlinkSync(outside, path.join(ws, 'escape')); // points out
  fs.symlinkSync(path.join(ws, 'src'), path.join(ws, 'inner')); // points back inside
  fs.symlinkSync(path.join(ws, 'src'), path.join(outside, 'into-ws')); // outside → inside
});

function mint(over: Partial<Parameters<typeof sign>[0]> = {}, r: KeyRing = ring): CapabilityToken {
  return sign(
    {
      v: 1,
      aud: 'traj-A',
      rights: ['read', 'write'],
      objects: [`path:${ws}`, 'host:example.com', 'repo:acme/widgets'],
      pred: { max_cost: 5, budget: 20 },
      exp: Date.now() + HOUR,
      parent: null,
      depth: 0,
      ...over,
    },
    r,
  );
}

let keySeq = 0;
async function check(token: unknown, target: Target, over: Partial<AccessRequest & { key: string }> = {}, withBudget = false) {
  const req = {
    op: 'read' as const,
    target,
    cost: 1,
    audience: 'traj-A',
    nowMs: Date.now(),
    key: `k-${uniqueId('call')}-${keySeq++}`,
    ...over,
  };
  return (await authorize(token, req, { ring, budgets: withBudget ? budgets : null })).verdict;
}
const p = (x: string): Target => ({ kind: 'path', path: x });

describe('legitimate accesses are allowed', () => {
  it.each<[string, () => Target]>([
    ['a file in the workspace', () => p(path.join(ws, 'src', 'a.ts'))],
    ['a new file in the workspace', () => p(path.join(ws, 'src', 'new.ts'))],
    ['the workspace itself', () => p(ws)],
    ['a symlink that stays inside', () => p(path.join(ws, 'inner', 'a.ts'))],
    ['an NFD spelling of an NFC path inside', () => p(path.join(ws, 'cafe\u0301', 'x'))],
    ['a subdomain of a host', () => ({ kind: 'host', host: 'API.Example.com' })],
    ['a host object without a port: port 443', () => ({ kind: 'host', host: 'api.example.com', port: 443 })],
    ['a host object without a port: port 80', () => ({ kind: 'host', host: 'example.com', port: 80 })],
    ['a host object with a port: that port', () => ({ kind: 'host', host: 'db.example.org', port: 5432 })],
    ['a granted IPv4 address and port', () => ({ kind: 'host', host: '93.184.215.14', port: 443 })],
    ['the named repository', () => ({ kind: 'repo', repo: 'acme/widgets' })],
  ])('%s', async (_name, target) => {
    const objects = [`path:${ws}`, 'host:example.com', 'host:db.example.org:5432', 'host:93.184.215.14:443', 'repo:acme/widgets'];
    expect(await check(mint({ objects }), target())).toEqual({ allowed: true });
  });

  it('a token signed by an older key still in the ring verifies (rotation)', async () => {
    const old = mint({}, { signingKid: 'k0', keys: ring.keys });
    expect(old.body.kid).toBe('k0');
    expect(await check(old, p(ws))).toEqual({ allowed: true });
  });
});

describe('attacks are denied with the right component', () => {
  // Issue 12 item 10: with exec alone, `sed -i` changed a file that file_edit was denied.
  it('exec without write: a shell could change any file of the workspace, so exec requires write', async () => {
    const execOnly = mint({ rights: ['read', 'exec'] });
    expect(await check(execOnly, p(ws), { op: 'exec' })).toMatchObject({
      allowed: false,
      component: 'rights',
      reason: expect.stringMatching(/exec also requires write/),
    });
    expect(await check(mint({ rights: ['read', 'write', 'exec'] }), p(ws), { op: 'exec' })).toEqual({ allowed: true });
  });

  it.each<[string, () => Target, string]>([
    ['traversal with ..', () => p(`${ws}/../${path.basename(outside)}/secret.txt`), 'objects'],
    ['a sibling sharing the prefix', () => p(`${ws}-evil/x`), 'objects'],
    ['a symlink pointing out', () => p(path.join(ws, 'escape', 'secret.txt')), 'objects'],
    ['a new file under a symlinked parent', () => p(path.join(ws, 'escape', 'new.txt')), 'objects'],
    ['a path outside that symlinks back in', () => p(path.join(outside, 'into-ws', 'a.ts')), 'objects'],
    ['an NFD spelling of a sibling', () => p(`${ws}-cafe\u0301/x`), 'objects'],
    ['a NUL byte', () => p(`${ws}/src/a.ts\0.png`), 'objects'],
    ['a trailing slash', () => p(`${ws}/src/`), 'objects'],
    ['an empty segment', () => p(`${ws}//src/a.ts`), 'objects'],
    ['a relative path', () => p('src/a.ts'), 'objects'],
    ['a host that only ends with the name', () => ({ kind: 'host', host: 'badexample.com' }), 'objects'],
    // Issue 12 item 4: host objects name ports; addresses are not domains.
    ['a port a host object without a port does not name', () => ({ kind: 'host', host: 'example.com', port: 5432 }), 'objects'],
    ['another port of a host object with a port', () => ({ kind: 'host', host: 'db.example.org', port: 5433 }), 'objects'],
    ['the default ports of a host object with a port', () => ({ kind: 'host', host: 'db.example.org' }), 'objects'],
    ['an address "within" an IPv4 object by suffix', () => ({ kind: 'host', host: '1.93.184.215.14', port: 443 }), 'objects'],
    ['an octal spelling of an address', () => ({ kind: 'host', host: '0177.0.0.1', port: 443 }), 'objects'],
    ['a short spelling of an address', () => ({ kind: 'host', host: '127.1', port: 443 }), 'objects'],
    ['a port out of range', () => ({ kind: 'host', host: 'example.com', port: 65536 }), 'objects'],
    ['an IPv6 literal (not grantable)', () => ({ kind: 'host', host: '[::1]', port: 443 }), 'objects'],
    ['another repository of the owner', () => ({ kind: 'repo', repo: 'acme/widgets-private' }), 'objects'],
  ])('%s', async (_name, target, component) => {
    const objects = [`path:${ws}`, 'host:example.com', 'host:db.example.org:5432', 'host:93.184.215.14:443', 'repo:acme/widgets'];
    expect(await check(mint({ objects }), target())).toMatchObject({ allowed: false, component });
  });

  it.each([
    ['aud', (t: CapabilityToken) => ({ ...t.body, aud: 'traj-B' })],
    ['rights', (t: CapabilityToken) => ({ ...t.body, rights: ['read', 'write', 'exec'] })],
    ['objects', (t: CapabilityToken) => ({ ...t.body, objects: ['path:/'] })],
    ['pred.max_cost', (t: CapabilityToken) => ({ ...t.body, pred: { ...t.body.pred, max_cost: 1e6 } })],
    ['pred.budget', (t: CapabilityToken) => ({ ...t.body, pred: { ...t.body.pred, budget: 1e9 } })],
    ['exp', (t: CapabilityToken) => ({ ...t.body, exp: t.body.exp + 365 * 24 * HOUR })],
    ['parent', (t: CapabilityToken) => ({ ...t.body, parent: 'a'.repeat(64) })],
    ['depth', (t: CapabilityToken) => ({ ...t.body, depth: 3 })],
    ['kid (to another known key)', (t: CapabilityToken) => ({ ...t.body, kid: 'k0' })],
    ['v', (t: CapabilityToken) => ({ ...t.body, v: 2 })],
  ])('a tampered %s is denied', async (field, tamper) => {
    const token = mint();
    const forged = { body: tamper(token), sig: token.sig };
    const verdict = await check(forged, p(ws), { audience: forged.body.aud });
    expect(verdict.allowed).toBe(false);
    expect(field === 'v' ? 'format' : 'signature').toBe((verdict as { component: string }).component);
  });

  it('a token this worker already verified does not vouch for a tampered copy, nor for another key ring', async () => {
    const token = mint();
    expect(await check(token, p(ws))).toEqual({ allowed: true }); // verified and remembered
    const widened = { body: { ...token.body, objects: ['path:/'] }, sig: token.sig };
    expect(await check(widened, p('/etc/passwd'))).toMatchObject({ allowed: false, component: 'signature' });
    const reordered = { sig: token.sig, body: Object.fromEntries(Object.entries(token.body).reverse()) };
    expect(await check(reordered, p(ws))).toEqual({ allowed: true }); // same body, other member order: verified in full
    const rotated = { signingKid: 'k2', keys: new Map([['k2', Buffer.alloc(32, 9)]]) };
    const verdict = (
      await authorize(
        token,
        { op: 'read', target: p(ws), cost: 1, audience: 'traj-A', nowMs: Date.now(), key: 'r' },
        { ring: rotated, budgets: null },
      )
    ).verdict;
    expect(verdict).toMatchObject({ allowed: false, component: 'kid' });
  });

  it('a swapped signature (from another valid token) is denied', async () => {
    const a = mint();
    const b = mint({ objects: [`path:${outside}`] });
    expect(await check({ body: b.body, sig: a.sig }, p(path.join(outside, 'secret.txt')))).toMatchObject({
      allowed: false,
      component: 'signature',
    });
  });

  it('an unknown key id is denied', async () => {
    const foreign = mint({}, { signingKid: 'kX', keys: new Map([['kX', Buffer.alloc(32, 7)]]) });
    expect(await check(foreign, p(ws))).toMatchObject({ allowed: false, component: 'kid' });
  });

  it('an expired token, a wrong audience, a missing right and a cost over the ceiling are denied', async () => {
    expect(await check(mint({ exp: Date.now() - 1 }), p(ws))).toMatchObject({ allowed: false, component: 'expiry' });
    expect(await check(mint(), p(ws), { audience: 'traj-B' })).toMatchObject({ allowed: false, component: 'audience' });
    expect(await check(mint(), p(ws), { op: 'exec' })).toMatchObject({ allowed: false, component: 'rights' });
    expect(await check(mint(), p(ws), { op: 'connect' })).toMatchObject({ allowed: false, component: 'rights' });
    expect(await check(mint(), p(ws), { cost: 6 })).toMatchObject({ allowed: false, component: 'cost' });
  });

  it('a malformed token is denied as format, naming the field', async () => {
    const token = mint();
    expect(await check({ ...token, sig: 'short' }, p(ws))).toMatchObject({ allowed: false, component: 'format' });
    expect(await check({ body: { ...token.body, extra: 1 }, sig: token.sig }, p(ws))).toMatchObject({
      allowed: false,
      component: 'format',
    });
  });
});

describe('budget', () => {
  it('charges each call key once, and denies once the budget is spent', async () => {
    const token = mint({ aud: uniqueId('budget'), pred: { max_cost: 5, budget: 12 } });
    const at = (key: string, cost: number) =>
      authorize(token, { op: 'read', target: p(ws), cost, audience: token.body.aud, nowMs: Date.now(), key }, { ring, budgets });
    expect((await at('c1', 5)).verdict).toEqual({ allowed: true });
    expect((await at('c1', 5)).verdict).toEqual({ allowed: true }); // a retry of the same call: not charged again
    expect((await at('c2', 5)).verdict).toEqual({ allowed: true });
    expect((await at('c3', 5)).verdict).toMatchObject({ allowed: false, component: 'budget' });
    expect((await budgets.get(tokenDigest(token)))!.spent).toBe(10);
    // Concurrent retries of one call are charged once too.
    await Promise.all(Array.from({ length: 8 }, () => at('c4', 2)));
    expect((await budgets.get(tokenDigest(token)))!.spent).toBe(12);
  });
});

describe('attenuation', () => {
  const child = (over: Partial<ChildRequest> = {}): ChildRequest => ({
    aud: uniqueId('child'),
    rights: ['read'],
    objects: [`path:${ws}/src`],
    max_cost: 2,
    budget: 5,
    exp: Date.now() + HOUR / 2,
    ...over,
  });

  it('narrows: the child token is signed, linked to its parent, one level deeper, and its budget reserved', async () => {
    const parent = mint({ aud: uniqueId('parent') });
    const result = await attenuate(parent, child(), parent.body.aud, { ring, budgets });
    if (!result.ok) throw new Error(result.reason);
    expect(result.token.body).toMatchObject({ parent: tokenDigest(parent), depth: 1, rights: ['read'], kid: 'k1' });
    expect(await check(result.token, p(path.join(ws, 'src', 'a.ts')), { audience: result.token.body.aud })).toEqual({ allowed: true });
    expect(await check(result.token, p(path.join(ws, 'café')), { audience: result.token.body.aud })).toMatchObject({
      allowed: false,
      component: 'objects',
    });
    expect(await budgets.get(tokenDigest(parent))).toMatchObject({ reserved: 5, spent: 0 });

    // The child spends 3 of 5; when it ends, 2 return to the parent and 3 count as spent there.
    for (const k of ['x1', 'x2', 'x3']) {
      await authorize(
        result.token,
        { op: 'read', target: p(ws + '/src'), cost: 1, audience: result.token.body.aud, nowMs: Date.now(), key: `${result.digest}:${k}` },
        { ring, budgets },
      );
    }
    await budgets.closeChild(result.digest);
    await budgets.closeChild(result.digest); // idempotent
    expect(await budgets.get(tokenDigest(parent))).toMatchObject({ reserved: 0, spent: 3 });
  });

  it.each([
    ['rights', () => ({ rights: ['read', 'exec'] })],
    ['objects', () => ({ objects: [`path:${path.dirname(ws)}`] })],
    ['objects', () => ({ objects: ['host:evil.com'] })],
    ['objects', () => ({ objects: ['host:example.com:8443'] })], // a port the parent's host:example.com (80, 443) does not name
    ['objects', () => ({ objects: ['host:0.0.1'] })], // not an address, not a name: refused
    ['cost', () => ({ max_cost: 6 })],
    ['budget', () => ({ budget: 21 })],
    ['expiry', () => ({ exp: Date.now() + 2 * HOUR })],
  ] as const)('refuses a wider %s', async (component, over) => {
    const parent = mint({ aud: uniqueId('parent') });
    const result = await attenuate(parent, child(over() as Partial<ChildRequest>), parent.body.aud, { ring, budgets });
    expect(result).toMatchObject({ ok: false, component });
  });

  it('narrows a host object to one port of a subdomain (issue 12 item 4)', async () => {
    const parent = mint({ aud: uniqueId('parent') });
    const result = await attenuate(parent, child({ objects: ['host:api.example.com:443'] }), parent.body.aud, { ring, budgets });
    expect(result).toMatchObject({ ok: true });
  });

  it("refuses a child budget larger than the parent's remaining budget", async () => {
    const parent = mint({ aud: uniqueId('parent'), pred: { max_cost: 5, budget: 10 } });
    const first = await attenuate(parent, child({ budget: 7 }), parent.body.aud, { ring, budgets });
    expect(first.ok).toBe(true);
    const second = await attenuate(parent, child({ budget: 4 }), parent.body.aud, { ring, budgets });
    expect(second).toMatchObject({ ok: false, component: 'budget', reason: "the child's budget 4 exceeds the parent's remaining 3" });
  });

  it('refuses a parent that is not the requester’s, or forged', async () => {
    const parent = mint({ aud: 'someone-else' });
    expect(await attenuate(parent, child(), 'me', { ring, budgets })).toMatchObject({ ok: false, component: 'audience' });
    expect(
      await attenuate({ body: { ...parent.body, rights: ['read', 'write', 'exec'] }, sig: parent.sig }, child(), 'someone-else', {
        ring,
        budgets,
      }),
    ).toMatchObject({
      ok: false,
      component: 'signature',
    });
  });
});

describe('key ring', () => {
  it('reads kid:base64 entries (first signs), or @FILE, and names the variable when wrong', () => {
    const s = Buffer.alloc(32, 1).toString('base64');
    expect(loadKeyRing({ SETTLE_CAP_KEYS: `new:${s},old:${s}` })).toMatchObject({ signingKid: 'new' });
    const file = path.join(tempWorkspace('keys'), 'keys');
    fs.writeFileSync(file, `f1:${s}\n`);
    expect(loadKeyRing({ SETTLE_CAP_KEYS: `@${file}` }).signingKid).toBe('f1');
    expect(() => loadKeyRing({})).toThrow(/^SETTLE_CAP_KEYS must be set/);
    expect(() => loadKeyRing({ SETTLE_CAP_KEYS: `k:${Buffer.alloc(8).toString('base64')}` })).toThrow(/at least 32 bytes/);
    expect(() => loadKeyRing({ SETTLE_CAP_KEYS: '@/nonexistent/keys' })).toThrow(/SETTLE_CAP_KEYS must name a readable file/);
  });
});

describe('issue 12: attacks that got through before', () => {
  it('item 8: only the canonical spelling of a signature verifies, and budgets follow the body, not the spelling', async () => {
    const token = mint({ aud: uniqueId('malleable'), pred: { max_cost: 5, budget: 2 } });
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(token.sig.at(-1)!);
    expect(last % 4).toBe(0); // canonical: the two unused low bits are zero
    const spellings = [0, 1, 2, 3].map((bits) => ({ body: token.body, sig: token.sig.slice(0, -1) + alphabet[last + bits]! }));
    // All four decode to the same 32 bytes.
    expect(new Set(spellings.map((s) => Buffer.from(s.sig, 'base64url').toString('hex'))).size).toBe(1);
    let allowed = 0;
    for (const [i, spelling] of spellings.entries()) {
      for (let call = 0; call < 3; call++) {
        const verdict = await check(spelling, p(ws), { audience: token.body.aud, key: `${token.body.aud}:${i}:${call}` }, true);
        if (verdict.allowed) allowed++;
        else if (i > 0) expect(verdict).toMatchObject({ component: 'format' });
      }
    }
    expect(allowed).toBe(2); // the budget, once — not once per spelling
    expect(new Set(spellings.map((s) => tokenDigest(s))).size).toBe(1);
    expect(await budgets.get(tokenDigest(token))).toMatchObject({ budget: 2, spent: 2 });
  });

  it('item 9: a child object naming a symlink that leads out is refused at attenuation, and grants nothing at access', async () => {
    const linked = tempWorkspace('cap-link');
    fs.symlinkSync(outside, path.join(linked, 'link-out'));
    const parent = mint({ aud: uniqueId('parent'), objects: [`path:${linked}`] });
    const secret = path.join(linked, 'link-out', 'secret.txt');
    // The parent itself may not read through the link.
    expect(await check(parent, p(secret), { audience: parent.body.aud })).toMatchObject({ allowed: false, component: 'objects' });
    const request: ChildRequest = {
      aud: uniqueId('child'),
      rights: ['read'],
      objects: [`path:${linked}/link-out`],
      max_cost: 1,
      budget: 1,
      exp: Date.now() + HOUR / 2,
    };
    expect(await attenuate(parent, request, parent.body.aud, { ring, budgets })).toMatchObject({
      ok: false,
      component: 'objects',
      reason: expect.stringContaining(`resolves to ${outside} through a symlink`),
    });
    // A child signed while link-out was still a plain directory: the link made afterwards grants nothing either.
    const child = sign(
      {
        v: 1,
        aud: request.aud,
        rights: ['read'],
        objects: request.objects,
        pred: { max_cost: 1, budget: 1 },
        exp: request.exp,
        parent: tokenDigest(parent),
        depth: 1,
      },
      ring,
    );
    expect(await check(child, p(secret), { audience: child.body.aud })).toMatchObject({
      allowed: false,
      component: 'objects',
      reason: expect.stringContaining('through a symlink and grants nothing'),
    });
  });

  it('item 15: a token verified once does not make an extra top-level member acceptable', async () => {
    const token = mint();
    expect(await check(token, p(ws))).toEqual({ allowed: true }); // verified, remembered
    expect(await check({ ...token, extra: 'anything' }, p(ws))).toMatchObject({ allowed: false, component: 'format' });
    expect(await check({ ...token, sig: token.sig, body: token.body, admin: true }, p(ws))).toMatchObject({
      allowed: false,
      component: 'format',
    });
  });
});
