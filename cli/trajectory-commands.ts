/**
 * Trajectory commands for orchestrator operators and SREs: start, status, approve, resolve.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { InputError } from '../core/errors';
import { parseIJson } from '../core/json-text';
import { TrajectorySpecSchema, type TrajectorySpec } from '../core/trajectory-input';
import { allIssues } from '../core/validation';
import { resolveCall } from './resolve-call';
import { withClient, withStore } from './connections';
import { UsageError } from './usage-error';
import { printable } from './terminal-text';

const KEY = /^[0-9a-f]{64}$/;

export function registerTrajectoryCommands(program: Command): void {
  program
    .command('start')
    .description('Start a trajectory from a JSON spec: trajectoryId plus the trajectory input (workspace, and turns or a model).')
    .argument('<spec>', 'path of the spec file, or - for stdin')
    .option('--cap <file>', 'the capability token for this trajectory (instead of "capability" in the spec)')
    .action(async (specPath: string, opts: { cap?: string }) => {
      const spec = readSpec(specPath, opts.cap);
      await withClient(async (client) => {
        const { trajectoryId, ...input } = spec;
        await client.start(trajectoryId, input);
        console.log(`started ${trajectoryId}`);
      });
    });

  program
    .command('status')
    .description("A trajectory's status, what it waits for, and every call with key, level, state, attempts.")
    .argument('<id>', 'trajectory id')
    .option('--json', 'JSON on stdout', false)
    .action(async (id: string, opts: { json: boolean }) => {
      await withClient(async (client) => {
        const status = await client.status(id).catch((err: Error) => {
          throw new UsageError(`ID: no trajectory ${JSON.stringify(id)} (${err.message})`);
        });
        if (opts.json) {
          console.log(JSON.stringify(status, null, 2));
          return;
        }
        console.log(
          `${printable(status.trajectoryId)}: ${status.runStatus} · ${printable(status.status ?? '-')} · in doubt ${status.inDoubt} · pending approvals ${status.pendingApprovals}`,
        );
        if (status.waitingFor) console.log(`waiting for: ${printable(status.waitingFor)}`);
        console.log('turn  call                  tool          level  key               state         resolution       attempts');
        for (const c of status.calls) {
          console.log(
            `${String(c.turn).padEnd(5)} ${printable(c.callId).slice(0, 20).padEnd(21)} ${printable(c.tool).padEnd(13)} ${String(c.level ?? '-').padEnd(6)} ${(c.key?.slice(0, 16) ?? '-').padEnd(17)} ${c.state.padEnd(13)} ${c.resolution.padEnd(16)} ${c.attempts}`,
          );
        }
      });
    });

  program
    .command('approve')
    .description('Approve (or with --deny, deny) an A3 call that waits for approval.')
    .argument('<id>', 'trajectory id')
    .argument('<key>', 'the call’s idempotency key')
    .requiredOption('--approver <name>', 'who decides (recorded)')
    .requiredOption('--reason <text>', 'why (recorded)')
    .option('--deny', 'deny instead of approve', false)
    .action(async (id: string, key: string, opts: { approver: string; reason: string; deny: boolean }) => {
      if (!KEY.test(key)) throw new UsageError(`KEY: must be 64 lowercase hex digits (got ${JSON.stringify(key)})`);
      await withClient(async (client) => {
        await client.approve(id, key, opts.approver, opts.deny ? 'deny' : 'approve', opts.reason).catch(rejected);
        console.log(`${opts.deny ? 'denied' : 'approved'} ${key.slice(0, 16)}… in ${id} by ${opts.approver}`);
      });
    });

  program
    .command('resolve')
    .description(
      'Settle an IN_DOUBT call by hand: through the settleCall update of its trajectory when that waits for it, ' +
        'else directly on the record (trajectory ended or not waiting), with the same audit trail.',
    )
    .argument('<key>', 'the call’s idempotency key')
    .requiredOption('--as <verdict>', 'applied | not-applied')
    .requiredOption('--operator <name>', 'who settles (recorded on the record and its events)')
    .requiredOption('--reason <text>', 'why (recorded)')
    .action(async (key: string, opts: { as: string; operator: string; reason: string }) => {
      if (!KEY.test(key)) throw new UsageError(`KEY: must be 64 lowercase hex digits (got ${JSON.stringify(key)})`);
      if (opts.as !== 'applied' && opts.as !== 'not-applied')
        throw new UsageError(`--as: must be applied or not-applied (got ${JSON.stringify(opts.as)})`);
      if (!opts.operator.trim()) throw new UsageError('--operator: must be a non-empty name');
      if (!opts.reason.trim()) throw new UsageError('--reason: must be a non-empty explanation');
      const settlement = {
        key,
        verdict: opts.as === 'applied' ? 'applied' : 'not_applied',
        operator: opts.operator,
        reason: opts.reason,
      } as const;
      const resolution = await withStore((store) => withClient((client) => resolveCall(client, store, settlement).catch(rejected)));
      if (resolution.path === 'none') {
        throw new UsageError(
          resolution.state === 'UNSEEN'
            ? `KEY: no endpoint record for ${key}`
            : `KEY: the record is ${resolution.state}, not IN_DOUBT; nothing to settle`,
        );
      }
      const settled = `${key.slice(0, 16)}… in ${printable(resolution.trajectoryId)}: ${resolution.state} (settled by operator:${opts.operator})`;
      console.log(
        resolution.path === 'update'
          ? `${settled} via the settleCall update of the waiting trajectory`
          : `${settled} directly on the record: ${resolution.why}; generation ${resolution.generation}`,
      );
    });
}

function readSpec(specPath: string, capPath?: string): TrajectorySpec {
  // Bytes through the strict I-JSON parser: the spec's scripted args become keys, so invalid
  // UTF-8, repeated members, rounded numbers and absurd nesting are refused here (exit 2).
  let json: unknown = strictJson(readBytes(specPath === '-' ? 0 : specPath, 'SPEC'), 'spec');
  if (capPath !== undefined) {
    if (json && typeof json === 'object' && 'capability' in json)
      throw new UsageError('--cap: must not be given when the spec has a "capability" already');
    json = { ...(json as object), capability: strictJson(readBytes(capPath, '--cap'), '--cap') };
  }
  const issues = allIssues(TrajectorySpecSchema, json, 'spec');
  if (issues.length) throw new UsageError(`${issues[0]!.field} must ${issues[0]!.rule}`);
  return TrajectorySpecSchema.parse(json);
}

function readBytes(file: string | 0, flag: string): Uint8Array {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${file === 0 ? 'stdin' : file} (${(err as Error).message})`);
  }
}

function strictJson(bytes: Uint8Array, field: string): unknown {
  try {
    return parseIJson(bytes, { field });
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message);
    throw err;
  }
}

/** A rejected update (validator) is bad input: show its reason as one line. */
function rejected(err: unknown): never {
  const cause = (err as { cause?: { message?: string } }).cause?.message;
  throw new UsageError(cause ?? (err as Error).message);
}
