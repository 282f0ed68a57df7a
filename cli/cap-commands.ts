/**
 * `settle cap keygen | mint | attenuate | check | show`, declared for `settle --help`; what they do
 * (with the token schemas and the key ring) is in cli/cap-actions.ts, imported when one of them runs.
 *
 * mint's and attenuate's options are required but declared plain, marked "(required)": the action
 * reports every missing one in one line, where commander stops at the first.
 */
import type { Command } from 'commander';
import { RIGHTS } from '../core/capability/rights';
import type { Widths } from './cap-actions';
import { KEYS_VARIABLE } from '../activities/capability/keyring';

export function registerCapabilityCommands(program: Command): void {
  const cap = program.command('cap').description('Signed capabilities: mint, attenuate, check, show (keys from SETTLE_CAP_KEYS).');

  cap
    .command('keygen')
    .description(
      `Make a capability key: one ${KEYS_VARIABLE} entry (kid:base64secret) for the workers and whoever mints; ` +
        'put the new key first to sign with it, keep the old ones after it while their tokens live.',
    )
    .option('--kid <id>', 'the key id (letters, digits, . _ -; default: k and today’s date)')
    .action(async (opts: { kid?: string }) => (await import('./cap-actions')).keygen(opts));

  const common = (c: Command) =>
    c
      .option('--audience <id>', '(required) the trajectory (workflow id) the capability is issued to')
      .option('--rights <list>', `(required) comma-separated subset of ${RIGHTS.join(',')}`)
      .option(
        '--objects <list>',
        '(required) comma-separated typed objects: path:/abs/dir, host:example.com, repo:owner/name, mcp:server[/tool]',
      )
      .option('--max-cost <n>', '(required) per-call cost ceiling (cost units)')
      .option('--budget <n>', '(required) total budget (cost units)')
      .option('--expires-in <duration>', '(required) lifetime, e.g. 30m, 1h, 7d')
      .option('--out <file>', 'write the token here instead of stdout');

  common(cap.command('mint').description(`Mint a root capability, signed with the first of ${KEYS_VARIABLE}.`)).action(
    async (opts: Partial<Widths>) => (await import('./cap-actions')).mint(opts),
  );

  common(cap.command('attenuate').description('Derive a narrower capability from a parent token (refuses any wider component).'))
    .option('--parent <file>', '(required) the parent token')
    .action(async (opts: Partial<Widths & { parent: string }>) => (await import('./cap-actions')).attenuateToken(opts));

  cap
    .command('check')
    .description('Check one access against a token: exit 0 allowed, 3 denied (one line naming the component).')
    .requiredOption('--cap <file>', 'the token')
    .requiredOption('--op <op>', RIGHTS.join('|'))
    .requiredOption('--target <target>', 'an absolute path, or host:NAME, or repo:OWNER/NAME, or mcp:SERVER/TOOL')
    .requiredOption('--cost <n>', 'cost of the access (cost units)')
    .requiredOption('--audience <id>', 'the trajectory making the access')
    .action(async (opts: { cap: string; op: string; target: string; cost: string; audience: string }) =>
      (await import('./cap-actions')).check(opts),
    );

  cap
    .command('show')
    .description('Decode a token: its body, digest and signature status.')
    .argument('<file>', 'the token')
    .action(async (file: string) => (await import('./cap-actions')).show(file));
}
