/**
 * Derived idempotency key, version 1 (docs/design.md#key-derivation).
 *
 *   material = JCS(["settle.key.v1", trajectory_id, turn, call_id, tool, args])
 *   key      = hex SHA-256(material)              — default
 *            = hex HMAC-SHA-256(secret, material) — keyed mode
 *
 * A key names a logical call, never an attempt: every input is known before the first attempt
 * and is the same on every retry. Pure JS hashing (@noble/hashes) so the exact same function
 * runs in Temporal's workflow sandbox (no node:crypto there) and in activities and the CLI.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { hmac } from '@noble/hashes/hmac.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { assertJsonValue, canonicalJsonOfValidated, type JsonValue } from './jcs';
import { InputError } from './errors';

export const KEY_VERSION_TAG = 'settle.key.v1';
// One encoder for the module (TextEncoder exists in Temporal's workflow sandbox too); creating one
// per call, as a generic helper does, costs as much as canonicalizing the arguments.
const utf8 = new TextEncoder();
/**
 * A tool's name: lower-case letters, digits, `_` and `-`, a letter first, at most 64 (what model
 * providers accept, and MCP's kebab-case names). The key material is a JSON array, so no
 * character of a name can run into another field.
 */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;
export const MAX_ID_LENGTH = 255;

/** The components that identify one logical tool call. */
export interface CallIdentity {
  /** The Temporal workflow id of the trajectory. */
  trajectoryId: string;
  /** Turn number, an integer ≥ 0. */
  turn: number;
  /** The model's tool-call id, or one the workflow derived deterministically. */
  callId: string;
  /** Catalog name of the tool. */
  tool: string;
  /** Validated arguments exactly as they will be executed (defaults already applied, or not — but the same every time). */
  args: Record<string, unknown>;
}

/** An idempotency key: 64 lowercase hex characters. */
export type IdempotencyKey = string & { readonly __brand: 'IdempotencyKey' };
export const KEY_PATTERN = /^[0-9a-f]{64}$/;

export function isIdempotencyKey(s: string): s is IdempotencyKey {
  return KEY_PATTERN.test(s);
}

/** The exact bytes that are hashed (exposed for tests, the CLI and the benchmark). */
export function keyMaterial(call: CallIdentity): Uint8Array {
  validateIdentity(call); // every component, once, with its own field name in errors
  const text = canonicalJsonOfValidated([KEY_VERSION_TAG, call.trajectoryId, call.turn, call.callId, call.tool, call.args as JsonValue]);
  return utf8.encode(text);
}

/**
 * Derives the key. With `secret` (keyed mode) the key cannot be guessed by other clients of the
 * endpoint; the secret must then stay in the runtime (activity/CLI), never in workflow code.
 */
export function deriveKey(call: CallIdentity, secret?: Uint8Array): IdempotencyKey {
  const material = keyMaterial(call);
  const digest = secret === undefined ? sha256(material) : hmac(sha256, secret, material);
  return bytesToHex(digest) as IdempotencyKey;
}

function validateIdentity(call: CallIdentity): void {
  checkId('trajectory_id', call.trajectoryId);
  if (typeof call.turn !== 'number' || !Number.isSafeInteger(call.turn) || call.turn < 0) {
    throw new InputError('turn', `be an integer ≥ 0 (got ${describe(call.turn)})`);
  }
  checkId('call_id', call.callId);
  if (typeof call.tool !== 'string' || !TOOL_NAME_PATTERN.test(call.tool)) {
    throw new InputError('tool', `match ${TOOL_NAME_PATTERN.source} (got ${describe(call.tool)})`);
  }
  const args = call.args as unknown;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new InputError('args', `be a JSON object (got ${Array.isArray(args) ? 'array' : describe(args)})`);
  }
  // Non-finite numbers and lone surrogates are reported with their location under `args`.
  assertJsonValue(args, 'args');
}

function checkId(field: string, value: unknown): void {
  if (typeof value !== 'string') throw new InputError(field, `be a string (got ${describe(value)})`);
  if (value.length === 0) throw new InputError(field, 'be non-empty');
  if (value.length > MAX_ID_LENGTH) throw new InputError(field, `be at most ${MAX_ID_LENGTH} characters (got ${value.length})`);
  assertJsonValue(value, field);
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number') return String(v);
  return v === null ? 'null' : typeof v;
}
