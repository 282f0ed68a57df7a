/**
 * Capabilities C = (R, O, P, E) as signed JSON tokens (docs/design.md#capability-tokens).
 *
 *   token = { body, sig }     sig = base64url HMAC-SHA-256(key[kid], JCS(body))
 *
 * The body names the trajectory it was issued to (`aud`), the key that signed it (`kid`), its
 * parent token's digest and its depth (sub-agent chain). Pure: schemas, canonical bytes and
 * digests only. Signing and verifying need the key ring and live in activities/capability/.
 */
import { z } from 'zod';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { canonicalJsonOfValidated } from '../jcs';
import { lazy } from '../lazy';
import { RIGHTS } from './rights';

export { RIGHTS, type Right } from './rights';

// The schemas are built on first use and kept in closures (core/lazy.ts): this module is preloaded
// into the workflow sandbox's shared module cache, which is deep-frozen, and a zod schema must
// stay out of its reach (workers/workflow-bundle.ts).

/** Typed object prefixes: `path:/abs/dir`, `host:example.com`, `repo:owner/name` (or `repo:owner`), `mcp:server/tool` (or `mcp:server`). */
export const ObjectSpec = lazy(() =>
  z
    .string()
    .min(5)
    .max(1100)
    .regex(/^(path|host|repo|mcp):.+$/, 'be a typed object such as path:/abs/dir, host:example.com, repo:owner/name or mcp:server/tool'),
);

export const CapabilityBody = lazy(() =>
  z
    .object({
      v: z.literal(1),
      kid: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9._-]+$/, 'be letters, digits, ".", "_" or "-" only'),
      aud: z.string().min(1).max(255),
      rights: z.array(z.enum(RIGHTS)).min(1).max(4),
      objects: z.array(ObjectSpec()).min(1).max(64),
      pred: z
        .object({
          /** Ceiling on one call's cost, in cost units. */
          max_cost: z.number().int().min(0).max(1_000_000_000),
          /** Total the trajectory (and its sub-agents) may spend, in cost units. */
          budget: z.number().int().min(0).max(1_000_000_000_000),
        })
        .strict(),
      /** Expiry, epoch milliseconds. */
      exp: z.number().int().min(0).max(8.64e15),
      /** Digest of the parent token; null for a root capability. */
      parent: z
        .string()
        .regex(/^[0-9a-f]{64}$/, 'be 64 lowercase hex digits (a SHA-256 digest)')
        .nullable(),
      depth: z.number().int().min(0).max(16),
    })
    .strict(),
);

export type CapabilityBody = z.output<ReturnType<typeof CapabilityBody>>;

export const CapabilityToken = lazy(() =>
  z
    .object({
      body: CapabilityBody(),
      // 43 characters carry 258 bits for a 256-bit MAC: the last character's two low bits are unused,
      // so four spellings would decode to one signature. Only the canonical one (unused bits zero,
      // as every encoder writes it) is accepted.
      sig: z
        .string()
        .regex(/^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/, 'be the canonical base64url encoding of an HMAC-SHA-256 (43 characters)'),
    })
    .strict(),
);

export type CapabilityToken = z.output<ReturnType<typeof CapabilityToken>>;

const utf8 = new TextEncoder();

/**
 * The exact text that is signed (its UTF-8 bytes): RFC 8785 of a schema-valid body.
 *
 * The body's shape is fixed by the strict schema, so its JCS text is written directly: members
 * in the code-unit order JCS sorts them into; integers as ES Number-to-string (what JCS and
 * JSON.stringify write for them); strings that need no escape (printable ASCII without `"` and
 * `\`, the common case) quoted as they are, any other through JSON.stringify (what JCS
 * specifies). ~20× faster than the generic serializer on the cold capability check;
 * test/capability/token-format.test.ts holds it byte-equal to `canonicalize` for arbitrary
 * valid bodies.
 */
export function signingText(body: CapabilityBody): string {
  return (
    `{"aud":${jsonString(body.aud)},"depth":${body.depth},"exp":${body.exp},"kid":${jsonString(body.kid)},` +
    `"objects":${jsonStrings(body.objects)},"parent":${body.parent === null ? 'null' : jsonString(body.parent)},` +
    `"pred":{"budget":${body.pred.budget},"max_cost":${body.pred.max_cost}},"rights":${jsonStrings(body.rights)},"v":${body.v}}`
  );
}

/** Printable ASCII except `"` and `\`: JSON (and JCS) write such a string between quotes, unchanged. */
const NO_ESCAPES = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function jsonString(s: string): string {
  return NO_ESCAPES.test(s) ? `"${s}"` : JSON.stringify(s);
}

function jsonStrings(xs: readonly string[]): string {
  let out = '[';
  for (let i = 0; i < xs.length; i++) out += (i === 0 ? '' : ',') + jsonString(xs[i]!);
  return out + ']';
}

/** The generic RFC 8785 serialization of a body; the reference signingText is tested against. */
export function genericSigningText(body: CapabilityBody): string {
  return canonicalJsonOfValidated(body);
}

/** The exact bytes that are signed. */
export function signingInput(body: CapabilityBody): Uint8Array {
  return utf8.encode(signingText(body));
}

/**
 * Names a token (budget accounting, parent links): hex SHA-256 of the signed text (JCS of the
 * body). The body, not the signature's spelling: one body is one token, whatever encodes its MAC
 * (HMAC is deterministic, so a valid body has exactly one signature).
 */
export function tokenDigest(token: CapabilityToken): string {
  return bytesToHex(sha256(utf8.encode(signingText(token.body))));
}
