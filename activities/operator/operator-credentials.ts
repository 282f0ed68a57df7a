/**
 * Minting (the operator's side: `settle resolve`, `settle approve`) and verifying (the worker's
 * side, before anything changes) operator credentials (core/operator-credential.ts).
 */
import crypto from 'node:crypto';
import { InputError } from '../../core/errors';
import {
  claimMismatch,
  credentialBody,
  OperatorCredential,
  signingText,
  type CredentialBody,
  type OperatorClaim,
} from '../../core/operator-credential';
import { OPERATOR_KEYS_VARIABLE, type OperatorKeys, type OperatorSigner } from './operator-keys';

export function mintCredential(signer: OperatorSigner, claim: OperatorClaim, nowMs = Date.now()): OperatorCredential {
  const body = credentialBody(claim, signer.operator, nowMs);
  return { body, sig: crypto.sign(null, Buffer.from(signingText(body), 'utf8'), signer.privateKey).toString('base64url') };
}

/** `rule` follows "credential must …" (InputError('credential', rule)). */
export type CredentialCheck = { ok: true; body: CredentialBody } | { ok: false; rule: string };

/**
 * Whether `raw` proves that an operator whose key this worker holds asked for exactly `expected`,
 * now. Fails closed: no keys, a malformed credential, an unknown operator, a signature that does
 * not verify, or any bound field, purpose or time that does not fit is refused with its reason
 * (the rule the credential broke).
 */
export function verifyCredential(
  raw: unknown,
  expected: OperatorClaim,
  keys: OperatorKeys | null,
  nowMs = Date.now(),
  at: 'decision' | 'execution' = 'decision',
): CredentialCheck {
  if (!keys) return refuse(`be verifiable: this worker holds no operator keys (${OPERATOR_KEYS_VARIABLE} is unset)`);
  const parsed = OperatorCredential().safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return refuse(
      `be an operator credential (settle resolve / settle approve mint one): ${[...issue.path].join('.') || 'it'}: ${issue.message}`,
    );
  }
  const { body, sig } = parsed.data;
  const key = keys.keys.get(body.operator);
  if (!key)
    return refuse(`be signed by an operator this worker knows (${JSON.stringify(body.operator)} is not in ${OPERATOR_KEYS_VARIABLE})`);
  if (!crypto.verify(null, Buffer.from(signingText(body), 'utf8'), key, Buffer.from(sig, 'base64url'))) {
    return refuse(`carry ${body.operator}'s signature over its body (the signature does not match)`);
  }
  const mismatch = claimMismatch(body, expected, nowMs, at);
  return mismatch ? refuse(mismatch) : { ok: true, body };
}

function refuse(rule: string): CredentialCheck {
  return { ok: false, rule };
}

/** As verifyCredential, throwing InputError (field `credential`) when it does not count. */
export function requireCredential(raw: unknown, expected: OperatorClaim, keys: OperatorKeys | null, nowMs = Date.now()): CredentialBody {
  const check = verifyCredential(raw, expected, keys, nowMs);
  if (!check.ok) throw new InputError('credential', check.rule);
  return check.body;
}
