/**
 * A tool defined through `defineTool` (api/worker.ts) — a team's own, and settle's built-ins
 * (built-in.ts) alike — and the one adapter onto the interfaces the settled runner drives
 * (SettledTool, ReadOnlyTool): the claim, lease, fence, probe and operator path is the same for
 * every tool (docs/plugin.md).
 */
import { z } from 'zod';
import type { ProbeVerdict } from '../../core/records';
import { ok, type Observation } from '../../core/observation';
import type { SideEffectLevel } from '../../core/tools/catalog';
import type { Right } from '../../core/capability/token';
import type { Target } from '../../core/capability/rules';
import { TOOL_NAME_PATTERN } from '../../core/key';
import type { RunLedger, SettledTool, ToolEnv } from '../settled/settled-tool';
import type { ReadOnlyTool } from './read-only-tool';

/**
 * Where a call runs, resolved by the worker (never from the tool's arguments): a trajectory's
 * workspace and what its capability grants. A call from `settled()` has no workspace ('') and no network.
 */
export interface ToolPlace {
  /** Real path of the trajectory's workspace directory; '' for a call from a team's workflow. */
  workspace: string;
  /** The worker's workspace root (its policy), when it has one. */
  workspaceRoot?: string;
  /** Whether the call may use the network: the capability's `connect` right. */
  network?: boolean;
  /** With `network`: the capability's `host:` objects, the only hosts the call may reach. */
  egress?: string[];
}

/** What `plan` is handed: the place and the call's key (to name what the plan records, e.g. a temporary file). */
export interface TeamPlanContext extends ToolPlace {
  key: string;
}

/** What `execute` is handed: the call's key and fencing token, and the lease check to make right before the effect. */
export interface TeamExecutionContext<Intent> extends ToolPlace {
  /** The derived idempotency key: for an A1 tool, send it downstream (e.g. as an `Idempotency-Key` header). */
  key: string;
  /** The fencing token of this execution; pass it downstream where the resource can check it. */
  generation: number;
  /** Throws (NoEffect) unless this executor still holds its lease: call it immediately before the effect. */
  assertLeaseHeld: () => void;
  /** The intent recorded on the endpoint record before this execution (plan's, or the arguments). */
  intent: Intent;
  /** The worker's start ledger, beyond any sandbox's reach: record that the execution starts (a probe may fence it first). */
  ledger?: RunLedger;
}

/** What `probe` is handed: the execution in doubt, where it ran, and the start ledger its executor wrote to. */
export interface TeamProbeContext extends ToolPlace {
  key: string;
  generation: number;
  ledger?: RunLedger;
}

/** What `prepare` is handed: the recorded intent, and whether an earlier attempt of this execution may have died mid-way. */
export interface TeamPrepareContext<Intent> extends ToolPlace {
  key: string;
  intent: Intent;
  /** Temporal retried the activity: what a dead earlier attempt prepared may still lie around. */
  retried: boolean;
}

/** An effect prepared (without effect) while the claim commits: applied if the claim is won, else discarded. */
export interface TeamPreparedEffect<Result> {
  /** Performs the effect: the same contract as `execute` (check the lease right before; NoEffect only when certain). */
  apply(ctx: Omit<TeamExecutionContext<unknown>, 'intent' | keyof ToolPlace>): Promise<Result>;
  /** The claim was not won: remove what was prepared. Never after `apply`. */
  discard(): Promise<void>;
}

/** What a call needs of a capability: a right on an object (a path, a host or a repository) and its cost. */
export interface ToolAccess {
  right: Right;
  target: Target;
  /** Cost units charged against the capability's per-call ceiling and budget (default 1). */
  cost?: number;
}

/** How a completed call is undone when the work it belonged to fails: another call (settled too), or why none exists. */
export type ToolCompensation = { kind: 'call'; tool: string; args: Record<string, unknown> } | { kind: 'none'; reason: string };

/** A plan's answer: the call is decided without any effect (e.g. a refused path), recorded COMPLETED with this result. */
export interface PlannedAnswer<Result> {
  readonly __settleAnswer: true;
  readonly result: Result;
}

/** Returned from `plan`: the call needs no effect; `result` is its outcome. */
export function answer<Result>(result: Result): PlannedAnswer<Result> {
  return Object.freeze({ __settleAnswer: true as const, result });
}

function isAnswer(value: unknown): value is PlannedAnswer<unknown> {
  return typeof value === 'object' && value !== null && (value as { __settleAnswer?: unknown }).__settleAnswer === true;
}

/** A finding of `settle lint` the definition keeps on purpose: its rule, and why. */
export interface AcceptedFinding {
  rule: string;
  /** RFC 6901 pointer into the published definition; absent: every finding of the rule. */
  pointer?: string;
  reason: string;
}

interface ToolDefinitionBase<Name extends string, Schema extends z.ZodType, Result> {
  /** Lower-case snake case, at most 64 characters; unique on the worker, never a built-in tool's name. */
  name: Name;
  /** What the tool does, for models and operators. */
  description: string;
  /** The argument model: validated on every call, published as JSON Schema 2020-12 and linted at worker start. */
  args: Schema;
  /** `settle lint` findings kept on purpose, each with a reason; any other finding refuses the definition. */
  accept?: readonly AcceptedFinding[];
  /**
   * The longest one execution (or read) takes, ms. Declared at most LOCAL_LANE_MAX_MS (2 000),
   * the tool runs in the local lane: a local activity inside the workflow task, cheaper than an
   * activity, bounded by this duration (a call that outlives it continues in the activity lane).
   * Undeclared, it runs as an activity. The worker's operator may move it either way (SETTLE_LANES).
   */
  maxDurationMs?: number;
  /**
   * What a call needs of a capability (validated arguments, where it runs): checked at every
   * access when the workflow passes one. Without it a call carrying a capability is refused:
   * a capability cannot authorize what it cannot see.
   */
  access?(args: z.output<Schema>, place: ToolPlace): ToolAccess;
  /**
   * The result as settle records and returns it (default: `{ output: JSON text, error: null,
   * exit_status: 0 }`). A tool whose results already are observations returns them as they are.
   */
  observe?(result: Result): Observation;
}

/** A0: read-only; no endpoint record, a retry reads again. */
export interface ReadOnlyToolDefinition<Name extends string, Schema extends z.ZodType, Result> extends ToolDefinitionBase<
  Name,
  Schema,
  Result
> {
  level: 'A0';
  run(args: z.output<Schema>, place: ToolPlace): Promise<Result>;
}

/** A1–A3: an effect, settled through an endpoint record. */
export interface EffectToolDefinition<Name extends string, Schema extends z.ZodType, Result, Intent> extends ToolDefinitionBase<
  Name,
  Schema,
  Result
> {
  level: 'A1' | 'A2' | 'A3';
  /**
   * Read-only: what the call will do, recorded before the effect (default: the arguments). JSON
   * only. Return `answer(result)` when the call is decided without any effect.
   */
  plan?(args: z.output<Schema>, ctx: TeamPlanContext): Promise<Intent | PlannedAnswer<Result>>;
  /**
   * Performs the effect. Throw NoEffect only when it is certain nothing happened; any other
   * exception leaves the call IN_DOUBT (its probe, or an operator, settles it).
   */
  execute(args: z.output<Schema>, ctx: TeamExecutionContext<Intent>): Promise<Result>;
  /**
   * Optional: the part of the effect that has no effect yet (e.g. writing a temporary file),
   * started while the claim commits; `apply` then performs the effect if the claim is won. What
   * it makes must be something the probe of the recorded intent withdraws; a prepare that fails
   * had no effect (the call is released).
   */
  prepare?(args: z.output<Schema>, ctx: TeamPrepareContext<Intent>): Promise<TeamPreparedEffect<Result>>;
  /**
   * Repeatable and read-only: did the recorded intent take effect? Without it an in-doubt call
   * waits for an operator. `unknown` with `final: true`: no later probe could tell either.
   */
  probe?(args: z.output<Schema>, intent: Intent, ctx: TeamProbeContext): Promise<ProbeVerdict<Result>>;
  /** Optional, best effort: the executor recorded the outcome itself; drop what was kept for a probe. */
  afterSettled?(args: z.output<Schema>, intent: Intent, at: { key: string; generation: number }): Promise<void>;
  /**
   * A2/A3: the call that undoes a completed call of this tool (its validated arguments), run
   * settled in reverse order when the work fails or is cancelled; `{ kind: 'none', reason }` when it cannot be undone.
   */
  compensate?(args: z.output<Schema>): ToolCompensation;
}

export type ToolDefinition<Name extends string = string, Schema extends z.ZodType = z.ZodType, Result = unknown, Intent = unknown> =
  ReadOnlyToolDefinition<Name, Schema, Result> | EffectToolDefinition<Name, Schema, Result, Intent>;

/** A definition checked for its shape (not yet for lint: that happens when the worker starts). */
export type TeamTool<
  Name extends string = string,
  Schema extends z.ZodType = z.ZodType,
  Result = unknown,
  Intent = unknown,
> = ToolDefinition<Name, Schema, Result, Intent> & { readonly __settleTool: true };

/* eslint-disable @typescript-eslint/no-explicit-any -- a list of tools of different argument and result types */
export type AnyTeamTool = TeamTool<string, z.ZodType, any, any>;
/* eslint-enable @typescript-eslint/no-explicit-any */

const LEVELS: readonly SideEffectLevel[] = ['A0', 'A1', 'A2', 'A3'];

/** Checks a definition's shape; throws a one-line error naming the field and the rule. */
export function defineTool<const Name extends string, Schema extends z.ZodType, Result, Intent = z.output<Schema>>(
  definition: ToolDefinition<Name, Schema, Result, Intent>,
): TeamTool<Name, Schema, Result, Intent> {
  const at = `defineTool(${JSON.stringify(definition?.name)})`;
  if (typeof definition?.name !== 'string' || !TOOL_NAME_PATTERN.test(definition.name)) {
    throw new Error(
      `${at}: name must match ${TOOL_NAME_PATTERN} (lower-case letters, digits, _ and -, a letter first, at most 64 characters)`,
    );
  }
  if (typeof definition.description !== 'string' || !definition.description.trim()) {
    throw new Error(`${at}: description must be a non-empty text`);
  }
  if (!(definition.args instanceof z.ZodType)) throw new Error(`${at}: args must be a zod schema`);
  if (!LEVELS.includes(definition.level)) throw new Error(`${at}: level must be one of ${LEVELS.join(', ')}`);
  if (definition.level === 'A0') {
    if (typeof definition.run !== 'function') throw new Error(`${at}: an A0 tool must define run(args)`);
  } else {
    const d = definition;
    if (typeof d.execute !== 'function') throw new Error(`${at}: an ${d.level} tool must define execute(args, ctx)`);
    if (d.plan !== undefined && typeof d.plan !== 'function') throw new Error(`${at}: plan must be a function`);
    for (const hook of ['plan', 'prepare', 'probe', 'afterSettled', 'compensate'] as const) {
      if (d[hook] !== undefined && typeof d[hook] !== 'function') throw new Error(`${at}: ${hook} must be a function`);
    }
    if (d.compensate !== undefined && d.level === 'A1') {
      throw new Error(`${at}: compensate is for A2 and A3 tools (an A1 call is idempotent, not undone)`);
    }
  }
  if (definition.maxDurationMs !== undefined && !(Number.isSafeInteger(definition.maxDurationMs) && definition.maxDurationMs > 0)) {
    throw new Error(`${at}: maxDurationMs must be a positive whole number of milliseconds`);
  }
  for (const hook of ['access', 'observe'] as const) {
    if (definition[hook] !== undefined && typeof definition[hook] !== 'function') throw new Error(`${at}: ${hook} must be a function`);
  }
  for (const [i, a] of (definition.accept ?? []).entries()) {
    if (typeof a?.rule !== 'string' || typeof a.reason !== 'string' || !a.reason.trim()) {
      throw new Error(`${at}: accept[${i}] must name a rule and give a non-empty reason`);
    }
  }
  return Object.freeze({ ...definition, __settleTool: true as const });
}

/** The definition as a model sees it: JSON Schema 2020-12 of the arguments (as publishedCatalog() publishes the built-ins). */
export function publishTeamTool(tool: AnyTeamTool): { name: string; description: string; parameters: Record<string, unknown> } {
  const parameters = z.toJSONSchema(tool.args, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
  return { name: tool.name, description: tool.description, parameters };
}

/** A result as the observation settle records and returns by default: its JSON text. */
export function observationOf(result: unknown): Observation {
  return ok(JSON.stringify(result ?? null));
}

/** The place of a call, as the runtime's ToolEnv hands it. */
function placeOf(env: ToolEnv): ToolPlace {
  return {
    workspace: env.workspace,
    ...(env.workspaceRoot !== undefined ? { workspaceRoot: env.workspaceRoot } : {}),
    ...(env.network !== undefined ? { network: env.network } : {}),
    ...(env.egress !== undefined ? { egress: env.egress } : {}),
  };
}

/**
 * A definition as the settled runtime runs it (activities/settled/run-settled.ts): the claim,
 * lease, fence, probe and operator path is the same for every tool, built-in or a team's (the
 * runtime validated the arguments already).
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- arguments validated against the tool's own schema */
export function settledToolOf(tool: AnyTeamTool): SettledTool<any, any, Observation> {
  if (tool.level === 'A0') throw new Error(`${tool.name} is an A0 tool: it runs read-only`);
  const d = tool;
  const observe = d.observe?.bind(d) ?? observationOf;
  const prepare = d.prepare?.bind(d);
  const afterSettled = d.afterSettled?.bind(d);
  return {
    name: d.name,
    async plan(args, env, at) {
      const planned: unknown = d.plan ? await d.plan(args, { ...placeOf(env), key: at?.key ?? '' }) : args;
      return isAnswer(planned) ? { kind: 'answer', result: observe(planned.result) } : { kind: 'proceed', intent: planned ?? null };
    },
    async execute(args, intent, env, ctx) {
      const recorded: unknown = intent;
      return observe(
        await d.execute(args, {
          ...placeOf(env),
          key: ctx.key,
          generation: ctx.generation,
          assertLeaseHeld: () => ctx.assertLeaseHeld(),
          intent: recorded,
          ...(ctx.ledger ? { ledger: ctx.ledger } : {}),
        }),
      );
    },
    ...(prepare
      ? {
          async prepare(args, intent, env, at) {
            const prepared: TeamPreparedEffect<unknown> = await prepare(args, {
              ...placeOf(env),
              key: at.key,
              intent: intent as unknown,
              retried: at.retried,
            });
            return {
              apply: async (ctx) =>
                observe(
                  await prepared.apply({
                    key: ctx.key,
                    generation: ctx.generation,
                    assertLeaseHeld: () => ctx.assertLeaseHeld(),
                    ...(ctx.ledger ? { ledger: ctx.ledger } : {}),
                  }),
                ),
              discard: () => prepared.discard(),
            };
          },
        }
      : {}),
    async probe(args, intent, env, at) {
      if (!d.probe) return { verdict: 'unknown', detail: `${d.name} declares no probe`, final: true };
      const verdict = await d.probe(args, intent, {
        ...placeOf(env),
        key: at?.key ?? '',
        generation: at?.generation ?? 0,
        ...(at?.ledger ? { ledger: at.ledger } : {}),
      });
      return verdict.verdict === 'applied' ? { ...verdict, result: observe(verdict.result) } : verdict;
    },
    ...(afterSettled ? { afterSettled: (args, intent, at) => afterSettled(args, intent, at) } : {}),
  };
}

export function readOnlyToolOf(tool: AnyTeamTool): ReadOnlyTool<any> {
  if (tool.level !== 'A0') throw new Error(`${tool.name} is an ${tool.level} tool: it runs settled`);
  const d = tool;
  const observe = d.observe?.bind(d) ?? observationOf;
  return { name: d.name, run: async (args, env) => observe(await d.run(args, placeOf(env))) };
}
/* eslint-enable @typescript-eslint/no-explicit-any */
