/** Signing and verifying capability tokens with the runtime's key ring. */
import { CapabilityBody, signingText, type CapabilityToken } from '../../core/capability/token';
import type { Verdict } from '../../core/capability/rules';
import type { KeyRing } from './keyring';
import { constantTimeEqual, hmacBase64url } from './keyed-mac';

export function sign(body: Omit<CapabilityBody, 'kid'>, ring: KeyRing): CapabilityToken {
  // Never sign a body the verifier would reject as malformed.
  const full = CapabilityBody().parse({ ...body, kid: ring.signingKid });
  return { body: full, sig: mac(ring.keys.get(ring.signingKid)!, full) };
}

/** Known key id and a matching signature, compared in constant time. */
export function verifySignature(token: CapabilityToken, ring: KeyRing): Verdict {
  const key = ring.keys.get(token.body.kid);
  if (!key) return { allowed: false, component: 'kid', reason: `unknown key id ${JSON.stringify(token.body.kid)}` };
  // The expected MAC in its one canonical spelling: equal text means a matching MAC written
  // canonically, so no second encoding of one MAC verifies (the schema says so too).
  if (constantTimeEqual(mac(key, token.body), token.sig)) return { allowed: true };
  if (Buffer.from(token.sig, 'base64url').toString('base64url') !== token.sig) {
    return { allowed: false, component: 'format', reason: 'the signature is not in canonical base64url' };
  }
  return { allowed: false, component: 'signature', reason: 'the signature does not match the body' };
}

/** base64url HMAC over the JCS text of a body that passed the CapabilityBody schema (so JCS cannot fail). */
function mac(key: Buffer, body: CapabilityBody): string {
  return hmacBase64url(key, signingText(body));
}
