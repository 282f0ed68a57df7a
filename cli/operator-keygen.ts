/** What `settle operator keygen NAME` does (declared in cli/operator-commands.ts). */
import fs from 'node:fs';
import { InputError } from '../core/errors';
import { generateOperatorKey, OPERATOR_KEY_VARIABLE, OPERATOR_KEYS_VARIABLE } from '../activities/operator/operator-keys';
import { UsageError } from './usage-error';

export function operatorKeygen(name: string, opts: { out?: string }): void {
  let pair: { privateText: string; publicText: string };
  try {
    pair = generateOperatorKey(name);
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message);
    throw err;
  }
  if (opts.out !== undefined) {
    try {
      fs.writeFileSync(opts.out, `${pair.privateText}\n`, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      throw new UsageError(`--out: cannot create ${opts.out} (${(err as Error).message})`);
    }
    console.log(`# ${name}'s private key is in ${opts.out}: ${OPERATOR_KEY_VARIABLE}=@${opts.out} in their environment only.`);
  } else {
    console.log(`# ${name}'s private key: in their environment only, never a worker's or an orchestrator's.`);
    console.log(`${OPERATOR_KEY_VARIABLE}=${pair.privateText}`);
  }
  console.log(`# For every worker (comma-separate several operators):`);
  console.log(`${OPERATOR_KEYS_VARIABLE}=${pair.publicText}`);
}
