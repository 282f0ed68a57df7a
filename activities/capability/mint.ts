/**
 * Minting a root capability, for whoever holds the capability keys: `settle cap mint`, and an
 * orchestrator through `mintCapability` (settle/client). Never workflow code: the keys stay in the
 * environment of the process that mints (SETTLE_CAP_KEYS).
 */
import { z } from 'zod';
import { InputError } from '../../core/errors';
import { ObjectSpec, RIGHTS, type CapabilityToken, type Right } from '../../core/capability/token';
import { loadKeyRing, type KeyRing } from './keyring';
import { sign } from './signer';

/** What a root capability grants, and to whom. */
export interface CapabilityGrant {
  /** The workflow id (trajectory id) the capability is issued to: no other workflow may use it. */
  audience: string;
  /** The rights it grants on its objects: `read`, `write`, `exec`, `connect`. */
  rights: readonly Right[];
  /** Typed objects: `path:/abs/dir`, `host:api.example.com`, `repo:owner/name`, `mcp:server/tool`. */
  objects: readonly string[];
  /** The most one call may cost, in cost units (a tool's `access` names a call's cost, default 1). */
  maxCost: number;
  /** What all calls under it together (sub-agents included) may spend, in cost units. */
  budget: number;
  /** How long it is valid, in milliseconds from now. */
  expiresInMs: number;
}

export interface MintOptions {
  /** The keys, in SETTLE_CAP_KEYS's form (`kid:base64secret,…` or `@FILE`); default: SETTLE_CAP_KEYS. */
  keys?: string;
  /** The current time, epoch milliseconds (default: now). */
  nowMs?: number;
}

const count = (max: number) => z.int({ error: 'be an integer' }).min(0, 'be ≥ 0').max(max, `be at most ${max}`);

/** The grant's rules, each phrased to follow "must" (core/errors.ts); the token's own schema checks the signed body again. */
const Grant = z.strictObject(
  {
    audience: z.string({ error: 'be a string' }).min(1, 'be a non-empty workflow id').max(255, 'be at most 255 characters'),
    rights: z
      .array(z.enum(RIGHTS, { error: `be one of ${RIGHTS.join(', ')}` }), { error: 'be an array of rights' })
      .min(1, 'name at least one right')
      .max(4, 'name each right once'),
    objects: z
      .array(ObjectSpec(), { error: 'be an array of typed objects' })
      .min(1, 'name at least one object')
      .max(64, 'name at most 64 objects'),
    maxCost: count(1_000_000_000),
    budget: count(1_000_000_000_000),
    expiresInMs: z.int({ error: 'be an integer' }).positive('be a positive number of milliseconds'),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `not have ${issue.keys.join(', ')}` : 'be an object') },
);

/**
 * Signs a root capability for one workflow with the first of the capability keys. Bad input
 * throws an `InputError` naming the field and the rule (`grant.rights.0 must be one of …`).
 */
export function mintCapability(grant: CapabilityGrant, options: MintOptions = {}): CapabilityToken {
  const parsed = Grant.safeParse(grant);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(['grant', ...issue.path.map(String)].join('.'), issue.message);
  }
  const { audience, rights, objects, maxCost, budget, expiresInMs } = parsed.data;
  const ring: KeyRing = loadKeyRing(options.keys === undefined ? process.env : { SETTLE_CAP_KEYS: options.keys });
  const body = {
    v: 1 as const,
    aud: audience,
    rights: [...new Set(rights)],
    objects,
    pred: { max_cost: maxCost, budget },
    exp: (options.nowMs ?? Date.now()) + expiresInMs,
    parent: null,
    depth: 0,
  };
  return sign(body, ring);
}
