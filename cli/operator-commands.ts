/** `settle operator keygen NAME`: an operator's key pair (docs/security.md#operator-authority). */
import fs from 'node:fs';
import type { Command } from 'commander';
import { InputError } from '../core/errors';
import { generateOperatorKey, OPERATOR_KEY_VARIABLE, OPERATOR_KEYS_VARIABLE } from '../activities/operator/operator-keys';
import { UsageError } from './usage-error';

export function registerOperatorCommands(program: Command): void {
  const operator = program.command('operator').description('Operator keys: what proves a verdict or approval came from an operator.');
  operator
    .command('keygen')
    .description(
      `Make an Ed25519 key pair for one operator: the private key for their environment (${OPERATOR_KEY_VARIABLE}), ` +
        `the public key for every worker (${OPERATOR_KEYS_VARIABLE}).`,
    )
    .argument('<name>', 'the operator’s name: recorded on every verdict and approval they sign')
    .option('--out <file>', 'write the private key to this new file (owner-only) instead of printing it')
    .action((name: string, opts: { out?: string }) => {
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
    });
}
