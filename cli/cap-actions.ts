/**
 * What `settle cap keygen | mint | attenuate | check | show` do (declared in cli/cap-commands.ts).
 * Keys come only from SETTLE_CAP_KEYS (or @FILE); `check` exits 0 when allowed and 3 when denied,
 * with one line naming the failed component.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { InputError } from '../core/errors';
import { checkBody, type Target } from '../core/capability/rules';
import { CapabilityToken, RIGHTS, tokenDigest, type Right } from '../core/capability/token';
import { parseDurationMs } from '../core/duration';
import { KEYS_VARIABLE, loadKeyRing } from '../activities/capability/keyring';
import { mintCapability } from '../activities/capability/mint';
import { verifySignature } from '../activities/capability/signer';
import { attenuate } from '../activities/capability/attenuate';
import { authorize } from '../activities/capability/authorize';
import { UsageError } from './usage-error';

export const DENIED_EXIT_CODE = 3;

/** The options mint and attenuate share. */
export interface Widths {
  audience: string;
  rights: string;
  objects: string;
  maxCost: string;
  budget: string;
  expiresIn: string;
  out?: string;
}

const WIDTH_FLAGS = {
  audience: '--audience',
  rights: '--rights',
  objects: '--objects',
  maxCost: '--max-cost',
  budget: '--budget',
  expiresIn: '--expires-in',
} as const;

/** `settle cap keygen`: a fresh 32-byte secret under a key id, as SETTLE_CAP_KEYS takes it. */
export function keygen(opts: { kid?: string }): void {
  const kid = opts.kid ?? `k${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(kid)) throw new UsageError('--kid: must be 1–64 letters, digits, . _ -');
  const entry = `${kid}:${crypto.randomBytes(32).toString('base64')}`;
  console.log(`# A secret: for the workers' and the minter's environment only (first entry signs, all verify; comma-separate several).`);
  console.log(`${KEYS_VARIABLE}=${entry}`);
}

/** Every required option that is missing, in one line (commander would name only the first). */
function requireAll<T extends object>(opts: Partial<T>, flags: Record<string, string>): T {
  const missing = Object.entries(flags)
    .filter(([name]) => opts[name as keyof T] === undefined)
    .map(([, flag]) => flag);
  if (missing.length) throw new UsageError(`missing required option${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  return opts as T;
}

export function mint(given: Partial<Widths>): void {
  const opts = requireAll<Widths>(given, WIDTH_FLAGS);
  keys(); // the key's error first, as before the grant's
  const { aud, rights, objects, max_cost, budget, expiresInMs } = requestFrom(opts);
  const token = mintCapability({ audience: aud, rights, objects, maxCost: max_cost, budget, expiresInMs });
  write(token, opts.out);
}

export async function attenuateToken(given: Partial<Widths & { parent: string }>): Promise<void> {
  const opts = requireAll<Widths & { parent: string }>(given, { ...WIDTH_FLAGS, parent: '--parent' });
  const ring = keys();
  const parent = readToken(opts.parent);
  const { expiresInMs: _expiresInMs, ...request } = requestFrom(opts);
  // The CLI acts for the operator (no requester audience to match). The child's budget is
  // reserved from the parent's in Postgres, as when a workflow attenuates: without its budget
  // row, every use of the child would be denied "budget exhausted".
  const { withStore } = await import('./connections');
  const { BudgetStore } = await import('../activities/capability/budget-store');
  const result = await withStore((store) => attenuate(parent, request, '', { ring, budgets: new BudgetStore(store.db) }), {
    why: "settle cap attenuate reserves the child's budget from the parent's in Postgres",
  });
  if (!result.ok) {
    console.error(`settle: attenuation refused (${result.component}): ${result.reason}`);
    process.exit(DENIED_EXIT_CODE);
  }
  write(result.token, opts.out);
}

export async function check(opts: { cap: string; op: string; target: string; cost: string; audience: string }): Promise<void> {
  const ring = keys();
  const token = readToken(opts.cap);
  if (!(RIGHTS as readonly string[]).includes(opts.op))
    throw new UsageError(`--op: must be one of ${RIGHTS.join(', ')} (got ${JSON.stringify(opts.op)})`);
  const target = parseTarget(opts.target);
  const cost = number(opts.cost, '--cost');
  const { verdict } = await authorize(
    token,
    { op: opts.op as Right, target, cost, audience: opts.audience, nowMs: Date.now(), key: 'cli-check' },
    { ring, budgets: null },
  );
  if (verdict.allowed) {
    console.log('allowed');
    return;
  }
  console.log(`denied (${verdict.component}): ${verdict.reason}`);
  process.exit(DENIED_EXIT_CODE);
}

export function show(file: string): void {
  const token = readToken(file);
  let status: string;
  try {
    const v = verifySignature(token, loadKeyRing());
    status = v.allowed ? `valid (key ${token.body.kid})` : `INVALID: ${v.component}: ${v.reason}`;
  } catch (err) {
    status = `not checked (${(err as Error).message})`;
  }
  console.log(JSON.stringify({ body: token.body, digest: tokenDigest(token), signature: status }, null, 2));
  // Unsigned-field sanity for a human reader: expired already?
  const expired = checkBody(token.body, {
    op: token.body.rights[0]!,
    target: { kind: 'path', path: '/' },
    cost: 0,
    audience: token.body.aud,
    nowMs: Date.now(),
  });
  if (!expired.allowed && expired.component === 'expiry') console.log(`note: ${expired.reason}`);
}

function keys() {
  try {
    return loadKeyRing();
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message);
    throw err;
  }
}

function requestFrom(opts: Widths) {
  const rights = opts.rights
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  for (const r of rights)
    if (!(RIGHTS as readonly string[]).includes(r))
      throw new UsageError(`--rights: each must be one of ${RIGHTS.join(', ')} (got ${JSON.stringify(r)})`);
  const objects = opts.objects
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  if (!objects.length) throw new UsageError('--objects: must name at least one object');
  if (!opts.audience.trim()) throw new UsageError('--audience: must be a non-empty trajectory id');
  let expiresInMs: number;
  try {
    expiresInMs = parseDurationMs(opts.expiresIn, '--expires-in');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const request = {
    aud: opts.audience,
    rights: [...new Set(rights)] as Right[],
    objects,
    max_cost: number(opts.maxCost, '--max-cost'),
    budget: number(opts.budget, '--budget'),
    exp: Date.now() + expiresInMs,
    expiresInMs,
  };
  // Validate objects and the whole body shape before signing anything.
  const probe = CapabilityToken().shape.body.safeParse({
    v: 1,
    kid: 'x',
    aud: request.aud,
    rights: request.rights,
    objects,
    pred: { max_cost: request.max_cost, budget: request.budget },
    exp: request.exp,
    parent: null,
    depth: 0,
  });
  if (!probe.success) {
    const issue = probe.error.issues[0]!;
    const flag =
      { objects: '--objects', rights: '--rights', aud: '--audience', pred: issue.path[1] === 'budget' ? '--budget' : '--max-cost' }[
        String(issue.path[0])
      ] ?? String(issue.path[0]);
    throw new UsageError(`${flag}: ${issue.message}`);
  }
  return request;
}

function parseTarget(text: string): Target {
  if (text.startsWith('host:')) return { kind: 'host', host: text.slice(5) };
  if (text.startsWith('repo:')) return { kind: 'repo', repo: text.slice(5) };
  if (text.startsWith('path:')) return { kind: 'path', path: text.slice(5) };
  if (text.startsWith('mcp:')) {
    const [server = '', ...tool] = text.slice(4).split('/');
    return { kind: 'mcp', server, tool: tool.length ? tool.join('/') : null };
  }
  if (text.startsWith('/')) return { kind: 'path', path: text };
  throw new UsageError(`--target: must be an absolute path, host:NAME, repo:OWNER/NAME or mcp:SERVER/TOOL (got ${JSON.stringify(text)})`);
}

function number(text: string, flag: string): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`${flag}: must be an integer ≥ 0 (got ${JSON.stringify(text)})`);
  return Number(text);
}

function readToken(file: string): CapabilityToken {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`${file}: must be a readable JSON capability token (${(err as Error).message})`);
  }
  const parsed = CapabilityToken().safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${file}: ${['token', ...issue.path].join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

function write(token: CapabilityToken, out: string | undefined): void {
  const text = JSON.stringify(token, null, 2) + '\n';
  if (out) fs.writeFileSync(out, text, { mode: 0o600 });
  else process.stdout.write(text);
}
