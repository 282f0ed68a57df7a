/**
 * `settle operator keygen NAME`: an operator's key pair (docs/security.md#operator-authority);
 * `settle operator public-key`: the public half of the key the CLI signs with, for a worker.
 * Declared here; what they do is in cli/operator-keygen.ts and cli/operator-key.ts, imported when they run.
 */
import type { Command } from 'commander';
import { OPERATOR_KEY_VARIABLE, OPERATOR_KEYS_VARIABLE } from '../activities/operator/key-variables';

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
    .action(async (name: string, opts: { out?: string }) => (await import('./operator-keygen')).operatorKeygen(name, opts));
  operator
    .command('public-key')
    .description(
      `Print the ${OPERATOR_KEYS_VARIABLE} entry of the key the CLI signs with (${OPERATOR_KEY_VARIABLE}, else settle dev's ` +
        'development key): give it to your own worker so it accepts your verdicts and approvals.',
    )
    .action(async () => (await import('./operator-key')).printPublicKey());
}
