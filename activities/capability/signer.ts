/** Signing and verifying capability tokens with the runtime's key ring. */
import crypto from 'node:crypto';
import { CapabilityBody, signingText, type CapabilityToken } from '../../core/capability/token';
import type { Verdict } from '../../core/capability/rules';
import type { KeyRing } from './keyring';

export function sign(body: Omit<CapabilityBody, 'kid'>, ring: KeyRing): CapabilityToken {
  // Never sign a body the verifier would reject as malformed.
  const full = CapabilityBody.parse({ ...body, kid: ring.signingKid });
  return { body: full, sig: mac(ring.keys.get(ring.signingKid)!, full).toString('base64url') };
}

/** Known key id and a matching signature, compared in constant time. */
export function verifySignature(token: CapabilityToken, ring: KeyRing): Verdict {
  const key = ring.keys.get(token.body.kid);
  if (!key) return { allowed: false, component: 'kid', reason: `unknown key id ${JSON.stringify(token.body.kid)}` };
  const expected = mac(key, token.body);
  const given = Buffer.from(token.sig, 'base64url');
  // Canonical spelling only (the schema says so too): no second encoding of one MAC.
  if (given.toString('base64url') !== token.sig) {
    return { allowed: false, component: 'format', reason: 'the signature is not in canonical base64url' };
  }
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
    return { allowed: false, component: 'signature', reason: 'the signature does not match the body' };
  }
  return { allowed: true };
}

/** HMAC over the JCS text of a body that passed the CapabilityBody schema (so JCS cannot fail). */
function mac(key: Buffer, body: CapabilityBody): Buffer {
  return crypto.createHmac('sha256', key).update(signingText(body), 'utf8').digest();
}
