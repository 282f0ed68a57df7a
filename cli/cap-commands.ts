/**
 * `settle cap mint | attenuate | check | show`, declared for `settle --help`; what they do (with
 * the token schemas and the key ring) is in cli/cap-actions.ts, imported when one of them runs.
 */
import type { Command } from 'commander';
import { RIGHTS } from '../core/capability/rights';
import type { Widths } from './cap-actions';

export function registerCapabilityCommands(program: Command): void {
  const cap = program.command('cap').description('Signed capabilities: mint, attenuate, check, show (keys from SETTLE_CAP_KEYS).');

  const common = (c: Command) =>
    c
      .requiredOption('--audience <id>', 'the trajectory (workflow id) the capability is issued to')
      .requiredOption('--rights <list>', `comma-separated subset of ${RIGHTS.join(',')}`)
      .requiredOption(
        '--objects <list>',
        'comma-separated typed objects: path:/abs/dir, host:example.com, repo:owner/name, mcp:server[/tool]',
      )
      .requiredOption('--max-cost <n>', 'per-call cost ceiling (cost units)')
      .requiredOption('--budget <n>', 'total budget (cost units)')
      .requiredOption('--expires-in <duration>', 'lifetime, e.g. 30m, 1h, 7d')
      .option('--out <file>', 'write the token here instead of stdout');

  common(cap.command('mint').description('Mint a root capability.')).action(async (opts: Widths) =>
    (await import('./cap-actions')).mint(opts),
  );

  common(cap.command('attenuate').description('Derive a narrower capability from a parent token (refuses any wider component).'))
    .requiredOption('--parent <file>', 'the parent token')
    .action(async (opts: Widths & { parent: string }) => (await import('./cap-actions')).attenuateToken(opts));

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
