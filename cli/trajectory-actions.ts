/**
 * What `settle start`, `approve` and `resolve` do (declared in cli/trajectory-commands.ts):
 * imported only when one of them runs, with Temporal's client, Postgres and the spec schemas.
 */
import fs from 'node:fs';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { InputError } from '../core/errors';
import { CATALOG } from '../core/tools/catalog';
import { SPAWN_SUBAGENT } from '../core/capability/subagent';
import { parseIJson } from '../core/json-text';
import { TrajectorySpecSchema, type TrajectorySpec } from '../core/trajectory-input';
import { allIssues } from '../core/validation';
import { approveCall, resolveCall, verdictOf } from './resolve-call';
import { operatorSigner, verifyingKeys } from './operator-key';
import { withClient, withStore } from './connections';
import { fullKey, keyArgument, uniqueKey } from './key-prefix';
import { readStdin } from './stdin';
import { UsageError } from './usage-error';
import { printable } from './terminal-text';

export async function startTrajectory(specPath: string, opts: { cap?: string; summary?: string }): Promise<void> {
  const spec = await readSpec(specPath, opts.cap);
  if (opts.summary !== undefined && !opts.summary.trim()) throw new UsageError('--summary: must be a non-empty text');
  await withClient(async (client) => {
    const { trajectoryId, ...input } = spec;
    const earlier = await client
      .handle(trajectoryId)
      .describe()
      .catch(() => null);
    if (earlier?.status.name === 'RUNNING') throw duplicateId(trajectoryId);
    await client.start(trajectoryId, input, opts.summary !== undefined ? { summary: opts.summary } : {}).catch((err: Error) => {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw duplicateId(trajectoryId);
      throw err;
    });
    console.log(`started ${printable(trajectoryId)}`);
    if (earlier) {
      // Keys derive from (trajectory id, turn, call): the same calls find their records.
      console.error(
        `note: ${printable(trajectoryId)} ran before (${earlier.status.name}): its calls keep their keys, ` +
          'so a call that matches a recorded one replays its recorded result instead of running again',
      );
    }
  });
}

export async function approve(id: string, keyArg: string, opts: { approver?: string; reason: string; deny: boolean }): Promise<void> {
  keyArgument(keyArg);
  if (!opts.reason.trim()) throw new UsageError('--reason: must be a non-empty explanation');
  const signer = operatorSigner();
  sameOperator('--approver', opts.approver, signer.operator);
  await withClient(async (client) => {
    // Without a worker the queries below would wait ~35 s for an answer that cannot come: say so at once.
    await client.requireWorker(id, 'take an approval').catch(rejected);
    // The call may have no record yet (A3 waits before its claim): its trajectory knows its keys.
    const key = keyArg.length === 64 ? keyArg : uniqueKey(keyArg, await client.callKeys(id).catch(rejected), `call of ${id}`);
    const decided = await approveCall(
      client,
      { trajectoryId: id, key, decision: opts.deny ? 'deny' : 'approve', reason: opts.reason },
      signer,
    ).catch(rejected);
    // What the credential binds, in full: the operator sees exactly what they signed.
    console.log(`${opts.deny ? 'denied' : 'approved'} ${key.slice(0, 16)}… in ${id} by ${signer.operator}`);
    console.log(`  ${printable(decided.tool)} ${printable(JSON.stringify(decided.args))}`);
  });
}

export async function resolve(keyArg: string, opts: { as: string; operator?: string; reason: string; generation?: string }): Promise<void> {
  keyArgument(keyArg);
  const generation = opts.generation === undefined ? undefined : Number(opts.generation);
  if (generation !== undefined && !(/^[1-9][0-9]*$/.test(opts.generation!) && Number.isSafeInteger(generation))) {
    throw new UsageError(`--generation: must be an integer ≥ 1 (got ${JSON.stringify(opts.generation)})`);
  }
  const verdict = verdictOf(opts.as);
  if (!verdict) throw new UsageError(`--as: must be applied, not-applied or partial (got ${JSON.stringify(opts.as)})`);
  if (!opts.reason.trim()) throw new UsageError('--reason: must be a non-empty explanation');
  const signer = operatorSigner();
  sameOperator('--operator', opts.operator, signer.operator);
  const key = await withStore((store) => fullKey(store, keyArg));
  const request = {
    key,
    verdict,
    reason: opts.reason,
    ...(generation !== undefined ? { generation } : {}),
  } as const;
  const authority = { signer, keys: verifyingKeys(signer) };
  const resolution = await withStore((store) => withClient((client) => resolveCall(client, store, request, authority).catch(rejected)));
  if (resolution.path === 'none') {
    throw new UsageError(
      resolution.state === 'UNSEEN'
        ? `KEY argument ${key}: must name an endpoint record; none has this key`
        : resolution.state === 'IN_DOUBT'
          ? `--generation: the record is IN_DOUBT at generation ${resolution.generation}, not the generation ${generation ?? 'read when resolve started'} examined; look again (settle show KEY)`
          : `KEY argument ${key}: must name an IN_DOUBT record; this one is ${resolution.state}, nothing to settle`,
    );
  }
  const settled = `${key.slice(0, 16)}… in ${printable(resolution.trajectoryId)}: ${resolution.state} (settled by operator:${resolution.operator})`;
  console.log(
    resolution.path === 'update'
      ? `${settled} via the settleCall update of the waiting trajectory`
      : `${settled} directly on the record: ${resolution.why}; generation ${resolution.generation}`,
  );
}

function duplicateId(trajectoryId: string): UsageError {
  return new UsageError(
    `trajectoryId: ${JSON.stringify(trajectoryId)} is already running; choose another id, or watch it (settle status ${trajectoryId})`,
  );
}

/**
 * Scripted calls must name a tool of the catalog (compiled into the CLI and the worker alike) or
 * spawn_subagent, as docs/spec.md says: refused now, not at run time.
 */
function checkScriptedTools(spec: TrajectorySpec): void {
  spec.turns?.forEach((turn, t) =>
    turn.calls.forEach((call, c) => {
      if (!Object.hasOwn(CATALOG, call.tool) && call.tool !== SPAWN_SUBAGENT) {
        throw new UsageError(
          `spec.turns[${t}].calls[${c}].tool must name a tool of the catalog (${Object.keys(CATALOG).join(', ')}) or ${SPAWN_SUBAGENT}; got ${JSON.stringify(call.tool)}`,
        );
      }
    }),
  );
}

async function readSpec(specPath: string, capPath?: string): Promise<TrajectorySpec> {
  // Bytes through the strict I-JSON parser: the spec's scripted args become keys, so invalid
  // UTF-8, repeated members, rounded numbers and absurd nesting are refused here (exit 2).
  let json: unknown = strictJson(await readBytes(specPath === '-' ? 0 : specPath, 'SPEC'), 'spec');
  if (capPath !== undefined) {
    if (json && typeof json === 'object' && 'capability' in json)
      throw new UsageError('--cap: must not be given when the spec has a "capability" already');
    json = { ...(json as object), capability: strictJson(await readBytes(capPath, '--cap'), '--cap') };
  }
  const issues = allIssues(TrajectorySpecSchema(), json, 'spec');
  if (issues.length) throw new UsageError(`${issues[0]!.field} must ${issues[0]!.rule}`);
  const spec = TrajectorySpecSchema().parse(json);
  checkScriptedTools(spec);
  return spec;
}

async function readBytes(file: string | 0, flag: string): Promise<Uint8Array> {
  try {
    return file === 0 ? await readStdin() : fs.readFileSync(file);
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

/**
 * A rejected update (its validator, or the worker's check of the operator credential) is bad
 * input: show the innermost reason (below "activity failed") as one line.
 */
function rejected(err: unknown): never {
  let reason = (err as Error).message;
  for (let e = (err as { cause?: unknown }).cause; e instanceof Error; e = (e as { cause?: unknown }).cause) reason = e.message;
  throw new UsageError(reason);
}

/** `--operator`/`--approver` are optional: the key names the operator, and a different name is refused. */
function sameOperator(flag: string, given: string | undefined, operator: string): void {
  if (given !== undefined && given !== operator) {
    throw new UsageError(`${flag}: must be the operator your key names (${operator}), or be left out`);
  }
}
