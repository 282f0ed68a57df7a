/**
 * A team's own tool, defined through `defineTool` (api/worker.ts), and how it maps onto the
 * interfaces settle's built-in tools implement (SettledTool, ReadOnlyTool): the claim, lease,
 * fence, probe and operator path runs unchanged for it (docs/plugin.md).
 */
import { z } from 'zod';
import type { ProbeVerdict } from '../../core/records';
import { ok, type Observation } from '../../core/observation';
import type { SideEffectLevel } from '../../core/tools/catalog';
import { TOOL_NAME_PATTERN } from '../../core/key';
import type { SettledTool, ToolEnv } from '../settled/settled-tool';
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
export interface TeamExecutionContext<Intent> {
  /** The derived idempotency key: for an A1 tool, send it downstream (e.g. as an `Idempotency-Key` header). */
  key: string;
  /** The fencing token of this execution; pass it downstream where the resource can check it. */
  generation: number;
  /** Throws (NoEffect) unless this executor still holds its lease: call it immediately before the effect. */
  assertLeaseHeld: () => void;
  /** The intent recorded on the endpoint record before this execution (plan's, or the arguments). */
  intent: Intent;
}

/** What `probe` is handed: the execution in doubt. */
export interface TeamProbeContext {
  key: string;
  generation: number;
}

/** A finding of `settle lint` the definition keeps on purpose: its rule, and why. */
export interface AcceptedFinding {
  rule: string;
  /** RFC 6901 pointer into the published definition; absent: every finding of the rule. */
  pointer?: string;
  reason: string;
}

interface ToolDefinitionBase<Name extends string, Schema extends z.ZodType> {
  /** Lower-case snake case, at most 64 characters; unique on the worker, never a built-in tool's name. */
  name: Name;
  /** What the tool does, for models and operators. */
  description: string;
  /** The argument model: validated on every call, published as JSON Schema 2020-12 and linted at worker start. */
  args: Schema;
  /** `settle lint` findings kept on purpose, each with a reason; any other finding refuses the definition. */
  accept?: readonly AcceptedFinding[];
}

/** A0: read-only; no endpoint record, a retry reads again. */
export interface ReadOnlyToolDefinition<Name extends string, Schema extends z.ZodType, Result> extends ToolDefinitionBase<Name, Schema> {
  level: 'A0';
  run(args: z.output<Schema>): Promise<Result>;
}

/** A1–A3: an effect, settled through an endpoint record. */
export interface EffectToolDefinition<Name extends string, Schema extends z.ZodType, Result, Intent> extends ToolDefinitionBase<
  Name,
  Schema
> {
  level: 'A1' | 'A2' | 'A3';
  /** Read-only: what the call will do, recorded before the effect (default: the arguments). JSON only. */
  plan?(args: z.output<Schema>, ctx: TeamPlanContext): Promise<Intent>;
  /**
   * Performs the effect. Throw NoEffect only when it is certain nothing happened; any other
   * exception leaves the call IN_DOUBT (its probe, or an operator, settles it).
   */
  execute(args: z.output<Schema>, ctx: TeamExecutionContext<Intent>): Promise<Result>;
  /**
   * Repeatable and read-only: did the recorded intent take effect? Without it an in-doubt call
   * waits for an operator.
   */
  probe?(args: z.output<Schema>, intent: Intent, ctx: TeamProbeContext): Promise<ProbeVerdict<Result>>;
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
    throw new Error(`${at}: name must match ${TOOL_NAME_PATTERN} (lower-case snake case, at most 64 characters)`);
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
    if (d.probe !== undefined && typeof d.probe !== 'function') throw new Error(`${at}: probe must be a function`);
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

/** A team tool's result as the observation settle records and returns: its JSON text. */
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

/** The built-in interfaces' implementation of a team tool (the runtime validated its arguments already). */
/* eslint-disable @typescript-eslint/no-explicit-any -- arguments validated against the tool's own schema */
export function settledToolOf(tool: AnyTeamTool): SettledTool<any, any, Observation> {
  if (tool.level === 'A0') throw new Error(`${tool.name} is an A0 tool: it runs read-only`);
  const d = tool;
  return {
    name: d.name,
    async plan(args, env, at) {
      const intent: unknown = d.plan ? await d.plan(args, { ...placeOf(env), key: at?.key ?? '' }) : args;
      return { kind: 'proceed', intent: intent ?? null };
    },
    async execute(args, intent, _env, ctx) {
      const recorded: unknown = intent;
      return observationOf(
        await d.execute(args, { key: ctx.key, generation: ctx.generation, assertLeaseHeld: () => ctx.assertLeaseHeld(), intent: recorded }),
      );
    },
    async probe(args, intent, _env, at) {
      if (!d.probe) return { verdict: 'unknown', detail: `${d.name} declares no probe`, final: true };
      const verdict = await d.probe(args, intent, { key: at?.key ?? '', generation: at?.generation ?? 0 });
      return verdict.verdict === 'applied' ? { ...verdict, result: observationOf(verdict.result) } : verdict;
    },
  };
}

export function readOnlyToolOf(tool: AnyTeamTool): ReadOnlyTool<any> {
  if (tool.level !== 'A0') throw new Error(`${tool.name} is an ${tool.level} tool: it runs settled`);
  const d = tool;
  return { name: d.name, run: async (args) => observationOf(await d.run(args)) };
}
/* eslint-enable @typescript-eslint/no-explicit-any */
