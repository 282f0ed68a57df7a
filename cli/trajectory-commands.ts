/**
 * Trajectory commands for orchestrator operators and SREs: start, status, approve, resolve.
 * Declared here for `settle --help`; what they do (with Temporal's client and Postgres) is in
 * cli/trajectory-actions.ts and cli/status-action.ts, imported when one of them runs.
 */
import type { Command } from 'commander';

export function registerTrajectoryCommands(program: Command): void {
  program
    .command('start')
    .description('Start a trajectory from a JSON spec: trajectoryId plus the trajectory input (workspace, and turns or a model).')
    .argument('<spec>', 'path of the spec file, or - for stdin')
    .option('--cap <file>', 'the capability token for this trajectory (instead of "capability" in the spec)')
    .option('--summary <text>', 'the static summary shown in the Web UI (default: who drives it and its workspace)')
    .action(async (specPath: string, opts: { cap?: string; summary?: string }) =>
      (await import('./trajectory-actions')).startTrajectory(specPath, opts),
    );

  program
    .command('status')
    .description(
      "A trajectory's status, what it waits for, its sub-agents, and every call with key, level, state, outcome, attempts. " +
        'With no worker polling its task queue, says so and shows its endpoint records instead of waiting for an answer.',
    )
    .argument('<id>', 'trajectory id')
    .option('--json', 'JSON on stdout', false)
    .action(async (id: string, opts: { json: boolean }) => (await import('./status-action')).trajectoryStatus(id, opts));

  program
    .command('approve')
    .description(
      'Approve (or with --deny, deny) an A3 call that waits for approval, signed with your operator key ' +
        '(SETTLE_OPERATOR_KEY, or the key of a running settle dev): the approver recorded is the key’s operator.',
    )
    .argument('<id>', 'trajectory id')
    .argument('<key>', 'the call’s idempotency key, or a unique prefix of at least 8 hex digits')
    .requiredOption('--reason <text>', 'why (recorded)')
    .option('--approver <name>', 'who decides: if given, must be the operator your key names')
    .option('--deny', 'deny instead of approve', false)
    .action(async (id: string, keyArg: string, opts: { approver?: string; reason: string; deny: boolean }) =>
      (await import('./trajectory-actions')).approve(id, keyArg, opts),
    );

  program
    .command('resolve')
    .description(
      'Settle an IN_DOUBT call by hand: through the settleCall update of its trajectory when that waits for it, ' +
        'else directly on the record (trajectory ended or not waiting), with the same audit trail.',
    )
    .argument('<key>', 'the call’s idempotency key, or a unique prefix of at least 8 hex digits')
    .requiredOption('--as <verdict>', 'applied | not-applied | partial (took effect in part: recorded completed, never run again)')
    .requiredOption('--reason <text>', 'why (recorded)')
    .option('--operator <name>', 'who settles: if given, must be the operator your key names (SETTLE_OPERATOR_KEY)')
    .option(
      '--generation <n>',
      'the generation you examined (settle show KEY): the verdict is refused if the record has moved on; default: the one read now',
    )
    .action(async (keyArg: string, opts: { as: string; operator?: string; reason: string; generation?: string }) =>
      (await import('./trajectory-actions')).resolve(keyArg, opts),
    );
}
