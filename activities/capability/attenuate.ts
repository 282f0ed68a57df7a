/**
 * Attenuation (docs/design.md#attenuation): a child capability may only narrow its parent's. It needs the key,
 * so it is an activity; the child's budget is reserved from the parent's remaining budget in
 * Postgres in the same step, and returns when the child ends.
 */
import { attenuationVerdict, parseObject, type ChildRequest } from '../../core/capability/rules';
import { redirectNote, symlinkedObject } from './authorize';
import { CapabilityToken, tokenDigest } from '../../core/capability/token';
import type { BudgetStore } from './budget-store';
import type { KeyRing } from './keyring';
import { sign, verifySignature } from './signer';

export type Attenuation = { ok: true; token: CapabilityToken; digest: string } | { ok: false; component: string; reason: string };

export async function attenuate(
  rawParent: unknown,
  child: ChildRequest,
  /** The workflow asking; it must be the parent's audience. */
  requester: string,
  deps: { ring: KeyRing; budgets: BudgetStore | null },
): Promise<Attenuation> {
  const parsed = CapabilityToken().safeParse(rawParent);
  if (!parsed.success) return { ok: false, component: 'format', reason: `parent: ${parsed.error.issues[0]!.message}` };
  const parent = parsed.data;
  const signature = verifySignature(parent, deps.ring);
  if (!signature.allowed) return { ok: false, component: signature.component, reason: `parent: ${signature.reason}` };
  if (requester && parent.body.aud !== requester)
    return { ok: false, component: 'audience', reason: `the parent capability belongs to ${parent.body.aud}, not ${requester}` };
  const verdict = attenuationVerdict(parent.body, child);
  if (!verdict.allowed) return { ok: false, component: verdict.component, reason: verdict.reason };
  // Compared as resolved: a child object naming a symlink (ws/link-out → /elsewhere) is within
  // the parent's by name only. Refused here, and granting nothing at access (authorize.ts).
  for (const o of child.objects) {
    const parsed = parseObject(o);
    if (parsed.kind !== 'path') continue;
    const redirect = await symlinkedObject(parsed.path);
    if (redirect) return { ok: false, component: 'objects', reason: `${o} ${redirectNote(redirect)}; name the real path` };
  }
  const token = sign(
    {
      v: 1,
      aud: child.aud,
      rights: child.rights,
      objects: child.objects,
      pred: { max_cost: child.max_cost, budget: child.budget },
      exp: child.exp,
      parent: tokenDigest(parent),
      depth: parent.body.depth + 1,
    },
    deps.ring,
  );
  const digest = tokenDigest(token);
  if (deps.budgets) {
    const parentDigest = tokenDigest(parent);
    if (parent.body.depth === 0) await deps.budgets.ensure(parentDigest, parent.body.aud, parent.body.pred.budget);
    const reservation = await deps.budgets.reserveChild(parentDigest, digest, child.aud, child.budget);
    if (reservation === 'exhausted') {
      const row = await deps.budgets.get(parentDigest);
      const remaining = row ? row.budget - row.spent - row.reserved : 0;
      return { ok: false, component: 'budget', reason: `the child's budget ${child.budget} exceeds the parent's remaining ${remaining}` };
    }
  }
  return { ok: true, token, digest };
}
