/**
 * The operator's own key, from the operator's environment (never the worker's, never an
 * orchestrator's): SETTLE_OPERATOR_KEY, else the development key of a running `settle dev`.
 * `settle resolve` and `settle approve` mint their credentials with it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InputError } from '../core/errors';
import { OPERATOR_NAME_PATTERN } from '../core/operator-credential';
import {
  generateOperatorKey,
  loadOperatorKeys,
  loadOperatorSigner,
  operatorKeysFromEnv,
  OPERATOR_KEY_VARIABLE,
  OPERATOR_KEYS_VARIABLE,
  publicEntry,
  type OperatorKeys,
  type OperatorSigner,
} from '../activities/operator/operator-keys';
import { SETTLE_DIR } from '../stack/paths';
import { readDevSettings } from './dev-settings';
import { UsageError } from './usage-error';

/** Where `settle dev` and the demo keep their development operator key (owner-only). */
export const DEV_OPERATOR_KEY_FILE = path.join(SETTLE_DIR, 'operator-key');

/** The operator's signing key, or a UsageError saying how to get one. */
export function operatorSigner(): OperatorSigner {
  const devKeyFile = process.env[OPERATOR_KEY_VARIABLE] ? undefined : readDevSettings()?.operatorKeyFile;
  const raw = process.env[OPERATOR_KEY_VARIABLE] || (devKeyFile ? `@${devKeyFile}` : '');
  if (!raw) {
    throw new UsageError(
      `${OPERATOR_KEY_VARIABLE}: must be set to your operator key (settle operator keygen NAME), or run \`settle dev\`, whose development key the CLI then uses`,
    );
  }
  try {
    return loadOperatorSigner(raw);
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message);
    throw err;
  }
}

/** `settle operator public-key`: the worker's SETTLE_OPERATOR_KEYS entry for the key the CLI signs with. */
export function printPublicKey(): void {
  // Only a public half is printed: settle dev's key from this project serves even while it is down.
  const signer =
    !process.env[OPERATOR_KEY_VARIABLE] && !readDevSettings() && fs.existsSync(DEV_OPERATOR_KEY_FILE)
      ? loadOperatorSigner(`@${DEV_OPERATOR_KEY_FILE}`, DEV_OPERATOR_KEY_FILE)
      : operatorSigner();
  console.log(
    `# ${signer.operator}'s public key, for every worker that accepts their verdicts and approvals (comma-separate several operators):`,
  );
  console.log(`${OPERATOR_KEYS_VARIABLE}=${publicEntry(signer)}`);
}

/**
 * The keys the CLI verifies a credential with before it writes a record itself (no worker in
 * between): SETTLE_OPERATOR_KEYS where the operator's environment has it, else the signer's own.
 */
export function verifyingKeys(signer: OperatorSigner): OperatorKeys {
  return operatorKeysFromEnv() ?? loadOperatorKeys(publicEntry(signer));
}

/**
 * The development operator key (`settle dev`, the demo): made once, kept owner-only in
 * `.settle/operator-key`, named after the OS user. Returns the signer (its public key goes to the
 * worker) and the file (the CLI finds it through the dev settings).
 */
export function devOperatorKey(file = DEV_OPERATOR_KEY_FILE): { signer: OperatorSigner; file: string } {
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const user = os.userInfo().username;
    const { privateText } = generateOperatorKey(OPERATOR_NAME_PATTERN.test(user) ? user : 'dev-operator');
    fs.writeFileSync(file, `${privateText}\n`, { mode: 0o600, flag: 'wx' });
  }
  return { signer: loadOperatorSigner(`@${file}`, file), file };
}

/** The worker's operator keys for development: the dev key's public half, plus SETTLE_OPERATOR_KEYS when set. */
export function devOperatorKeys(signer: OperatorSigner): OperatorKeys {
  const fromEnv = operatorKeysFromEnv();
  const dev = loadOperatorKeys(publicEntry(signer));
  return { keys: new Map([...(fromEnv?.keys ?? []), ...dev.keys]) };
}

/** SETTLE_OPERATOR_KEYS for a worker process of `settle dev` (or one joining it): the operator's own (if set) plus the dev key's public half. */
export function devWorkerOperatorKeys(signer: OperatorSigner, env: NodeJS.ProcessEnv = process.env): string {
  const own = env[OPERATOR_KEYS_VARIABLE]?.trim();
  const text = own?.startsWith('@') ? fs.readFileSync(own.slice(1), 'utf8').trim() : own;
  return [text, publicEntry(signer)].filter(Boolean).join(',');
}
