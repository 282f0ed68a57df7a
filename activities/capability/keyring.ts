/**
 * The capability signing keys: only the runtime holds them. From SETTLE_CAP_KEYS, as
 * comma-separated `kid:base64secret` entries (the first signs new tokens, all verify, so keys
 * can rotate), or `@/path/to/file` holding the same text. Never from a flag, an argument,
 * workflow code or history.
 */
import fs from 'node:fs';
import { InputError } from '../../core/errors';

export interface KeyRing {
  /** Key id that signs new tokens. */
  signingKid: string;
  keys: ReadonlyMap<string, Buffer>;
}

export const KEYS_VARIABLE = 'SETTLE_CAP_KEYS';
const MIN_SECRET_BYTES = 32;

export function loadKeyRing(env: NodeJS.ProcessEnv = process.env): KeyRing {
  const raw = env[KEYS_VARIABLE];
  if (!raw) throw new InputError(KEYS_VARIABLE, 'be set to kid:base64secret[,kid:base64secret…] or @FILE');
  let text = raw.trim();
  if (text.startsWith('@')) {
    try {
      text = fs.readFileSync(text.slice(1), 'utf8').trim();
    } catch (err) {
      throw new InputError(KEYS_VARIABLE, `name a readable file after @ (${(err as Error).message})`);
    }
  }
  const keys = new Map<string, Buffer>();
  for (const [i, entry] of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .entries()) {
    const colon = entry.indexOf(':');
    const kid = entry.slice(0, colon);
    const secret = Buffer.from(entry.slice(colon + 1), 'base64');
    if (colon < 1 || !/^[A-Za-z0-9._-]{1,64}$/.test(kid))
      throw new InputError(`${KEYS_VARIABLE}[${i}]`, 'be kid:base64secret with a kid of letters, digits, . _ -');
    if (secret.length < MIN_SECRET_BYTES)
      throw new InputError(`${KEYS_VARIABLE}[${i}] (${kid})`, `hold a secret of at least ${MIN_SECRET_BYTES} bytes (got ${secret.length})`);
    if (keys.has(kid)) throw new InputError(`${KEYS_VARIABLE}[${i}]`, `not repeat key id ${kid}`);
    keys.set(kid, secret);
  }
  const signingKid = keys.keys().next().value;
  if (signingKid === undefined) throw new InputError(KEYS_VARIABLE, 'hold at least one kid:base64secret entry');
  return { signingKid, keys };
}
