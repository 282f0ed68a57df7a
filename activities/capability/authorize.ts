/**
 * The capability check at every access, in the activity (docs/design.md#checks-at-every-access): format, key id,
 * signature (constant time), audience = the executing workflow id, expiry on this worker's
 * clock, right, objects (segment-wise, NFC, then symlinks resolved), per-call cost, and the
 * budget — charged once per call key in Postgres.
 */
import { checkBody, hostSpec, parseObject, type AccessRequest, type Verdict } from '../../core/capability/rules';
import { tokenDigest } from '../../core/capability/token';
import { isWithin } from '../../core/paths';
import { InputError } from '../../core/errors';
import { realpathOfNearestExisting } from '../workspace';
import type { BudgetStore } from './budget-store';
import type { KeyRing } from './keyring';
import { verifySignature } from './signer';
import { checkTokenFormat } from './token-format';
import { lookupVerified, rememberVerified, verifiedKey } from './verified-tokens';

export interface Authorization {
  verdict: Verdict;
  /** Whether the sandbox may use the network (the token grants `connect`). */
  network: boolean;
  /** With `connect`: the token's `host:` objects (canonical), the only hosts the egress proxy reaches. */
  egress?: string[];
}

export async function authorize(
  rawToken: unknown,
  request: AccessRequest & { key: string },
  deps: { ring: KeyRing; budgets: BudgetStore | null },
): Promise<Authorization> {
  const cacheKey = verifiedKey(rawToken);
  let token = lookupVerified(deps.ring, cacheKey);
  if (!token) {
    const format = checkTokenFormat(rawToken);
    if (!format.ok) {
      return { verdict: { allowed: false, component: 'format', reason: `capability.${format.field}: ${format.message}` }, network: false };
    }
    const signature = verifySignature(format.token, deps.ring);
    if (!signature.allowed) return { verdict: signature, network: false };
    token = format.token;
    rememberVerified(deps.ring, cacheKey, token);
  }
  const body = checkBody(token.body, request);
  if (!body.allowed) return { verdict: body, network: false };
  if (request.target.kind === 'path') {
    const symlinks = await withinAfterSymlinks(request.target.path, token.body.objects);
    if (!symlinks.allowed) return { verdict: symlinks, network: false };
  }
  if (deps.budgets) {
    const digest = tokenDigest(token);
    if (token.body.depth === 0) await deps.budgets.ensure(digest, token.body.aud, token.body.pred.budget);
    const charge = await deps.budgets.charge(digest, request.key, request.cost);
    if (charge === 'exhausted')
      return { verdict: { allowed: false, component: 'budget', reason: `budget of ${token.body.pred.budget} exhausted` }, network: false };
  }
  const network = token.body.rights.includes('connect');
  return { verdict: { allowed: true }, network, ...(network ? { egress: hostObjects(token.body.objects) } : {}) };
}

/** The `host:` objects in canonical text (`host:name[:port]`); one that does not parse grants nothing. */
function hostObjects(objects: readonly string[]): string[] {
  return objects.flatMap((o) => {
    try {
      const parsed = parseObject(o);
      return parsed.kind === 'host' ? [`host:${hostSpec(parsed)}`] : [];
    } catch (err) {
      if (err instanceof InputError) return [];
      throw err;
    }
  });
}

/**
 * The real target (symlinks resolved; nearest existing ancestor for a new file) must stay inside
 * an object as written. An object whose own path passes through a symlink grants nothing: it
 * would reach wherever the link points, wider than the parent that approved its name
 * (attenuation checks the same, activities/capability/attenuate.ts).
 */
async function withinAfterSymlinks(target: string, objects: string[]): Promise<Verdict> {
  let real: string;
  try {
    real = await realpathOfNearestExisting(target.normalize('NFC'), 'target');
  } catch (err) {
    if (err instanceof InputError) return { allowed: false, component: 'objects', reason: err.message };
    throw err;
  }
  const notes: string[] = [];
  for (const o of objects) {
    const parsed = parseObject(o);
    if (parsed.kind !== 'path') continue;
    const redirect = await symlinkedObject(parsed.path);
    if (redirect) {
      if (isWithin(real, redirect) || isWithin(target, parsed.path)) notes.push(`${o} ${redirectNote(redirect)}`);
      continue;
    }
    if (isWithin(real, parsed.path)) return { allowed: true };
  }
  return {
    allowed: false,
    component: 'objects',
    reason: `${target} resolves to ${real}, outside ${objects.join(', ')}${notes.length ? ` (${notes.join('; ')})` : ''}`,
  };
}

/** Where a path object really leads, when that is not the path as written (a symlink on the way); else null. */
export async function symlinkedObject(objectPath: string): Promise<string | null> {
  let real: string;
  try {
    real = await realpathOfNearestExisting(objectPath, 'object');
  } catch (err) {
    // A dangling symlink on the way: it leads nowhere we can vouch for.
    if (err instanceof InputError) return `${objectPath} (a dangling symlink)`;
    throw err;
  }
  return real === objectPath ? null : real;
}

export function redirectNote(real: string): string {
  return `resolves to ${real} through a symlink and grants nothing`;
}
