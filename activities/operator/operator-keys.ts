/**
 * Operator keys (Ed25519), apart from capability keys: a worker holds only their public halves
 * (SETTLE_OPERATOR_KEYS), each operator their own private key (SETTLE_OPERATOR_KEY), so neither an
 * orchestrator nor a compromised worker can mint an operator's verdict or approval.
 *
 *   SETTLE_OPERATOR_KEYS = NAME:PUBLIC[,NAME:PUBLIC…] or @FILE   PUBLIC: base64url of the 32-byte key
 *   SETTLE_OPERATOR_KEY  = NAME:PRIVATE or @FILE                 PRIVATE: base64url of its PKCS#8 DER
 *
 * NAME is the operator's name: the key's id, and what the audit trail records.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { InputError } from '../../core/errors';
import { OPERATOR_NAME_PATTERN, OPERATOR_NAME_RULE } from '../../core/operator-credential';
import { OPERATOR_KEY_VARIABLE, OPERATOR_KEYS_VARIABLE } from './key-variables';

export { OPERATOR_KEY_VARIABLE, OPERATOR_KEYS_VARIABLE } from './key-variables';

/** The public keys a worker verifies operator credentials with, by operator name. */
export interface OperatorKeys {
  keys: ReadonlyMap<string, crypto.KeyObject>;
}

/** One operator's signing key. */
export interface OperatorSigner {
  operator: string;
  privateKey: crypto.KeyObject;
}

export function loadOperatorKeys(text: string, field = OPERATOR_KEYS_VARIABLE): OperatorKeys {
  const keys = new Map<string, crypto.KeyObject>();
  const entries = readSetting(text, field)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const { name, material } = nameAndMaterial(entry, `${field}[${i}]`, 'NAME:base64url-public-key');
    if (keys.has(name)) throw new InputError(`${field}[${i}]`, `not repeat operator ${name}`);
    try {
      if (Buffer.from(material, 'base64url').length !== 32) throw new Error('not 32 bytes');
      keys.set(name, crypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: material }, format: 'jwk' }));
    } catch {
      throw new InputError(`${field}[${i}] (${name})`, 'hold a 32-byte Ed25519 public key in base64url (settle operator keygen)');
    }
  }
  if (keys.size === 0) throw new InputError(field, 'hold at least one NAME:base64url-public-key entry');
  return { keys };
}

/** The worker's operator keys from its environment, or null when SETTLE_OPERATOR_KEYS is unset (operator actions are then refused). */
export function operatorKeysFromEnv(env: NodeJS.ProcessEnv = process.env): OperatorKeys | null {
  const raw = env[OPERATOR_KEYS_VARIABLE];
  return raw ? loadOperatorKeys(raw) : null;
}

export function loadOperatorSigner(text: string, field = OPERATOR_KEY_VARIABLE): OperatorSigner {
  const { name, material } = nameAndMaterial(readSetting(text, field), field, 'NAME:base64url-pkcs8-private-key');
  try {
    const privateKey = crypto.createPrivateKey({ key: Buffer.from(material, 'base64url'), format: 'der', type: 'pkcs8' });
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('not Ed25519');
    return { operator: name, privateKey };
  } catch {
    throw new InputError(`${field} (${name})`, 'hold an Ed25519 private key (PKCS#8, base64url) made by settle operator keygen');
  }
}

/** A new key pair for `operator`, as the two settings' text. */
export function generateOperatorKey(operator: string): { privateText: string; publicText: string } {
  if (!OPERATOR_NAME_PATTERN.test(operator)) throw new InputError('NAME', OPERATOR_NAME_RULE);
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ed25519');
  return {
    privateText: `${operator}:${privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url')}`,
    publicText: `${operator}:${publicHalf(publicKey)}`,
  };
}

/** The public key entry (NAME:PUBLIC) that verifies `signer`'s credentials. */
export function publicEntry(signer: OperatorSigner): string {
  return `${signer.operator}:${publicHalf(crypto.createPublicKey(signer.privateKey))}`;
}

function publicHalf(publicKey: crypto.KeyObject): string {
  return publicKey.export({ format: 'jwk' }).x!;
}

/** The setting's text, or the text of the file it names after `@`. */
function readSetting(raw: string, field: string): string {
  const text = raw.trim();
  if (!text.startsWith('@')) return text;
  try {
    return fs.readFileSync(text.slice(1), 'utf8').trim();
  } catch (err) {
    throw new InputError(field, `name a readable file after @ (${(err as Error).message})`);
  }
}

function nameAndMaterial(entry: string, field: string, shape: string): { name: string; material: string } {
  const colon = entry.indexOf(':');
  const name = entry.slice(0, colon);
  if (colon < 1) throw new InputError(field, `be ${shape}`);
  if (!OPERATOR_NAME_PATTERN.test(name)) throw new InputError(field, `start with an operator name that is ${OPERATOR_NAME_RULE.slice(3)}`);
  return { name, material: entry.slice(colon + 1).trim() };
}
