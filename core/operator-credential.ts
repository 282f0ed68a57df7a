/**
 * Operator credentials: what proves that an operator — not an orchestrator — settled an IN_DOUBT
 * call or decided an A3 approval (docs/security.md#operator-authority).
 *
 *   credential = { body, sig }     sig = base64url Ed25519(operator's private key, signingText(body))
 *
 * The body binds the purpose, the Temporal namespace and trajectory, the call's key, the
 * generation examined (verdicts), the verdict or decision, the reason, and a short validity;
 * `operator` names the key that signed it, and is the name recorded. An approval also binds the
 * call the operator was shown: its tool and the digest of its arguments (`callDigest`), so a
 * workflow that misdescribes a call can only obtain an approval of the call it described. Pure:
 * schema, canonical text and the claim rules. Keys, signing and verifying live in activities/operator/.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { z } from 'zod';
import { canonicalJson, canonicalJsonOfValidated } from './jcs';
import { lazy } from './lazy';

/** Operator names: the id of their key, and what the audit trail records (`operator:NAME`). */
export const OPERATOR_NAME_PATTERN = /^[A-Za-z0-9._@-]{1,64}$/;
export const OPERATOR_NAME_RULE = 'be 1–64 letters, digits, . _ @ -';

/**
 * An operator's verdicts on an IN_DOUBT call: it took effect, it did not, or it took effect in
 * part (recorded COMPLETED with a partial observation; never run again by settle).
 */
export const OPERATOR_VERDICTS = ['applied', 'not_applied', 'partial'] as const;
export type OperatorVerdict = (typeof OPERATOR_VERDICTS)[number];

/** How long a credential is valid by default, and at most (a credential is minted right before use). */
export const CREDENTIAL_LIFETIME_MS = 5 * 60_000;
export const MAX_CREDENTIAL_LIFETIME_MS = 15 * 60_000;
/** How far the minting machine's clock may run ahead of the worker's. */
export const CLOCK_SKEW_MS = 60_000;

const Key = () => z.string().regex(/^[0-9a-f]{64}$/);
const Digest = () => z.string().regex(/^[0-9a-f]{64}$/);
const Text = () => z.string().min(1).max(2000);
const Time = () => z.number().int().min(0).max(8.64e15);
const Common = () => ({
  v: z.literal(2),
  operator: z.string().regex(OPERATOR_NAME_PATTERN),
  /** The Temporal namespace of the trajectory: a credential counts in no other. */
  namespace: z.string().min(1).max(1000),
  trajectoryId: z.string().min(1).max(1000),
  key: Key(),
  reason: Text(),
  /** Issued at and expires at, epoch milliseconds. */
  iat: Time(),
  exp: Time(),
});

export const CredentialBody = lazy(() =>
  z.discriminatedUnion('purpose', [
    z
      .object({
        purpose: z.literal('settle'),
        ...Common(),
        generation: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
        verdict: z.enum(OPERATOR_VERDICTS),
      })
      .strict(),
    z
      .object({
        purpose: z.literal('approve'),
        ...Common(),
        decision: z.enum(['approve', 'deny']),
        /** The tool the operator was shown, and the digest of the arguments shown with it (callDigest). */
        tool: z.string().min(1).max(200),
        call: Digest(),
      })
      .strict(),
  ]),
);
export type CredentialBody = z.infer<ReturnType<typeof CredentialBody>>;

export const OperatorCredential = lazy(() =>
  z
    .object({
      body: CredentialBody(),
      /** Ed25519 signatures are 64 bytes: 86 characters of unpadded base64url. */
      sig: z.string().regex(/^[A-Za-z0-9_-]{86}$/),
    })
    .strict(),
);
export type OperatorCredential = z.infer<ReturnType<typeof OperatorCredential>>;

/** What a credential must say to count for one action (everything but operator and times). */
export type OperatorClaim =
  | Omit<Extract<CredentialBody, { purpose: 'settle' }>, 'v' | 'operator' | 'iat' | 'exp'>
  | Omit<Extract<CredentialBody, { purpose: 'approve' }>, 'v' | 'operator' | 'iat' | 'exp'>;

/** Names the version of what `callDigest` hashes. */
export const CALL_DIGEST_TAG = 'settle.call.v1';

/**
 * What an approval binds of the call itself: hex SHA-256 of JCS([tag, tool, args]). The CLI and
 * the console compute it from what they show; the activity from what it is about to execute.
 */
export function callDigest(tool: string, args: Record<string, unknown>): string {
  return bytesToHex(sha256(new TextEncoder().encode(canonicalJson([CALL_DIGEST_TAG, tool, args], 'args'))));
}

/** The signed bytes: a domain tag (no other signature of the same key can pass for one), then the JCS of the body. */
export function signingText(body: CredentialBody): string {
  return `settle-operator-credential\n${canonicalJsonOfValidated(body)}`;
}

/** The body a credential for `claim` carries, issued by `operator` at `nowMs`. */
export function credentialBody(claim: OperatorClaim, operator: string, nowMs: number, lifetimeMs = CREDENTIAL_LIFETIME_MS): CredentialBody {
  return CredentialBody().parse({ ...claim, v: 2, operator, iat: nowMs, exp: nowMs + lifetimeMs });
}

/**
 * Why a (signature-checked) body does not count for `expected` at `nowMs`, or null when it does:
 * the same purpose and every bound field equal, issued no later than the clock skew allows,
 * unexpired, and valid no longer than the maximum lifetime.
 */
export function claimMismatch(
  body: CredentialBody,
  expected: OperatorClaim,
  nowMs: number,
  /** `execution`: an approval checked again when its call executes (or re-executes after NOT_EXECUTED). */
  at: 'decision' | 'execution' = 'decision',
): string | null {
  if (body.purpose !== expected.purpose)
    return `be for ${expected.purpose === 'settle' ? 'a verdict' : 'an approval'} (it is for ${body.purpose})`;
  for (const [field, value] of Object.entries(expected)) {
    const given = (body as Record<string, unknown>)[field];
    if (given !== value) return `be for this ${field} (it names ${JSON.stringify(given)}, the request ${JSON.stringify(value)})`;
  }
  if (body.exp - body.iat > MAX_CREDENTIAL_LIFETIME_MS) return `be valid for at most ${MAX_CREDENTIAL_LIFETIME_MS / 60_000} minutes`;
  if (body.iat > nowMs + CLOCK_SKEW_MS) return 'not be issued in the future (check the clocks)';
  // Expiry bounds when a decision may be taken. An approval already taken stays valid for its one
  // call (key and call digest), which the endpoint record lets execute at most once per generation.
  if (at === 'decision' && body.exp <= nowMs) return `be unexpired (it expired ${new Date(body.exp).toISOString()}; mint a new one)`;
  return null;
}
