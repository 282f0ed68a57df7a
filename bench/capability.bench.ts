/**
 * `npm run bench:capability` — capability checks per second, signature verification included,
 * against bare HMAC-SHA-256 over the same body bytes, in the same run (target ≥ 0.5×).
 *
 *   check     = the token's format check (compiled from the zod schema) + JCS of the body + HMAC + constant-time compare + the
 *               body rules (audience, expiry, right, objects, cost) — what every access pays
 *               before touching the file system;
 *   warm      = the same for a token this worker has already verified (signature remembered,
 *               keyed by the signature and the exact body text; the rules still run);
 *   check+fs  = authorize(): warm check plus the symlink resolution of the target (realpath);
 *   baseline  = HMAC-SHA-256 over the pre-serialized body bytes.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Figure } from './support/figures';
import { authorize } from '../activities/capability/authorize';
import { sign, verifySignature } from '../activities/capability/signer';
import { lookupVerified, rememberVerified, verifiedKey } from '../activities/capability/verified-tokens';
import { checkBody } from '../core/capability/rules';
import { signingInput } from '../core/capability/token';
import { checkTokenFormat } from '../activities/capability/token-format';

const ROUNDS = 6;
const N = 20_000;

export async function benchCapability(): Promise<Figure[]> {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-capbench-'));
  fs.writeFileSync(path.join(ws, 'a.ts'), 'x');
  const ring = { signingKid: 'k1', keys: new Map([['k1', crypto.randomBytes(32)]]) };
  const token = sign(
    {
      v: 1,
      aud: 'bench-trajectory',
      rights: ['read', 'write'],
      objects: [`path:${ws}`, 'host:example.com'],
      pred: { max_cost: 10, budget: 1000 },
      exp: Date.now() + 3_600_000,
      parent: null,
      depth: 0,
    },
    ring,
  );
  const raw: unknown = JSON.parse(JSON.stringify(token)); // as it arrives in an activity's input
  const request = {
    op: 'read' as const,
    target: { kind: 'path' as const, path: path.join(ws, 'a.ts') },
    cost: 1,
    audience: 'bench-trajectory',
    nowMs: Date.now(),
  };
  const bodyBytes = signingInput(token.body);
  const key = ring.keys.get('k1')!;

  // Cold: what the first access with a token pays (and every access without the cache).
  const syncCheck = () => {
    const format = checkTokenFormat(raw);
    if (!format.ok) throw new Error(format.message);
    if (!verifySignature(format.token, ring).allowed) throw new Error('bad signature');
    if (!checkBody(format.token.body, request).allowed) throw new Error('denied');
  };
  // Warm: later accesses with the same token (activities/capability/verified-tokens.ts).
  const cachedCheck = () => {
    const cacheKey = verifiedKey(raw);
    let token = lookupVerified(ring, cacheKey);
    if (!token) {
      const format = checkTokenFormat(raw);
      if (!format.ok) throw new Error(format.message);
      token = format.token;
      if (!verifySignature(token, ring).allowed) throw new Error('bad signature');
      rememberVerified(ring, cacheKey, token);
    }
    if (!checkBody(token.body, request).allowed) throw new Error('denied');
  };
  const hmacOnly = () => {
    crypto.createHmac('sha256', key).update(bodyBytes).digest();
  };

  // Each round runs the cold check, the warm check and the bare HMAC in alternating batches, so a
  // pause of the process (other work on the machine, a GC) falls on all three alike.
  const BATCH = 1_000;
  const timed = (f: () => void) => {
    const t = performance.now();
    for (let i = 0; i < BATCH; i++) f();
    return performance.now() - t;
  };
  const rates = { check: [] as number[], cached: [] as number[], fs: [] as number[], hmac: [] as number[] };
  for (let round = 0; round <= ROUNDS; round++) {
    const ms = { check: 0, cached: 0, hmac: 0 };
    for (let b = 0; b < N / BATCH; b++) {
      ms.check += timed(syncCheck);
      ms.cached += timed(cachedCheck);
      ms.hmac += timed(hmacOnly);
    }
    const t = performance.now();
    for (let i = 0; i < N / 4; i++) {
      const { verdict } = await authorize(raw, { ...request, key: 'k' }, { ring, budgets: null });
      if (!verdict.allowed) throw new Error('denied');
    }
    const withFs = ((N / 4) * 1000) / (performance.now() - t);
    if (round > 0) {
      rates.check.push((N * 1000) / ms.check);
      rates.cached.push((N * 1000) / ms.cached);
      rates.fs.push(withFs);
      rates.hmac.push((N * 1000) / ms.hmac);
    }
  }
  const best = (xs: number[]) => Math.max(...xs);
  fs.rmSync(ws, { recursive: true, force: true });
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const hmac = best(rates.hmac);
  return [
    { group: 'capability', figure: 'check, cold (parse + JCS + HMAC + rules)', value: Math.round(best(rates.check)), unit: '/s' },
    { group: 'capability', figure: 'check, token already verified (warm)', value: Math.round(best(rates.cached)), unit: '/s' },
    { group: 'capability', figure: 'check + realpath of the target', value: Math.round(best(rates.fs)), unit: '/s' },
    {
      group: 'capability',
      figure: 'bare HMAC-SHA-256 over the body',
      value: Math.round(hmac),
      unit: '/s',
      detail: { bodyBytes: bodyBytes.length },
    },
    {
      group: 'capability',
      figure: 'cold check / HMAC',
      value: r2(best(rates.check) / hmac),
      unit: '×',
      against: 'bare HMAC-SHA-256 over the pre-serialized body',
      detail: { target: '≥ 0.5' },
    },
    {
      group: 'capability',
      figure: 'warm check / HMAC',
      value: r2(best(rates.cached) / hmac),
      unit: '×',
      against: 'bare HMAC-SHA-256 over the pre-serialized body',
    },
    {
      group: 'capability',
      figure: 'warm check + realpath / HMAC',
      value: r2(best(rates.fs) / hmac),
      unit: '×',
      against: 'bare HMAC-SHA-256 over the pre-serialized body',
    },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  benchCapability()
    .then((figures) => {
      for (const f of figures) console.log(`${f.figure.padEnd(48)} ${String(f.value).padStart(10)} ${f.unit}`);
    })
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
