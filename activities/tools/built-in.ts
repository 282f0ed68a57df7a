/**
 * settle's built-in tools, defined through `defineTool` like any team's tool: the registry holds
 * them and a team's tools alike (registry.ts). Each wraps its implementation (file-view.ts …):
 * the arguments, level and probe support are the catalog's (core/tools/catalog.ts, what models
 * see and `settle lint` checks); capability access and compensation are core's, shared with the
 * workflow's pre-check and compensations. spawn_subagent is a definition too, run by the
 * trajectory as a child workflow (workflows/subagent.ts), never by an activity.
 */
import { accessFor } from '../../core/capability/access';
import { SPAWN_SUBAGENT, spawnSubagentArgs } from '../../core/capability/subagent';
import type { Observation } from '../../core/observation';
import { BASH_EXECUTE, bashExecuteArgs } from '../../core/tools/bash-execute';
import { CATALOG, WORKSPACE_FREE_TOOLS, type ToolName } from '../../core/tools/catalog';
import { compensationFor } from '../../core/tools/compensation';
import { FILE_EDIT, fileEditArgs } from '../../core/tools/file-edit';
import { FILE_VIEW, fileViewArgs } from '../../core/tools/file-view';
import { GREP_SEARCH, grepSearchArgs } from '../../core/tools/grep-search';
import { lazy } from '../../core/lazy';
import { NoEffect, type SettledTool, type ToolEnv } from '../settled/settled-tool';
import type { ReadOnlyTool } from './read-only-tool';
import { bashExecute } from './bash-execute';
import { fileEdit } from './file-edit';
import { fileView } from './file-view';
import { grepSearch } from './grep-search';
import { httpRequest } from './http-request';
import { HTTP_REQUEST } from '../../core/tools/http-request';
import { answer, defineTool, type AnyTeamTool, type ToolAccess, type ToolPlace } from './team-tool';
import type { z } from 'zod';

/** The built-ins' results are observations already. */
const asObservation = (o: Observation): Observation => o;

/** The catalog's capability mapping (the workflow's pre-check uses the same one). */
function accessOf(tool: ToolName) {
  return (args: unknown, place: ToolPlace): ToolAccess => {
    const { op, target, cost } = accessFor(tool, args as Record<string, unknown>, place.workspace);
    return { right: op, target, cost };
  };
}

/** The place a definition is handed is the environment the implementations take. */
function envOf(place: ToolPlace): ToolEnv {
  return place;
}

/** The description published to models: the argument model's own. */
function describedBy(schema: z.ZodType): string {
  return schema.description ?? '';
}

/**
 * The file tools' bound in the local lane (core/tools/lanes.ts): a read or edit of a workspace
 * file takes milliseconds. One that takes longer (a starved host, a slow disk) goes on as an
 * activity rather than keep its workflow task open near the task timeout.
 */
const FILE_TOOL_MAX_MS = 1_000;

// The reads stay in the activity lane by default: a turn may read many large windows (64 KiB
// each), more than a trajectory's history can carry without continuing as new. An operator may
// move one to the local lane (SETTLE_LANES); there the workflow bounds the local reads' bytes per
// workflow task (core/history-budget.ts), whose completion Temporal caps at 4 MB, and the reads
// past that bound run as activities.
function readOnly<Args>(name: ToolName, schema: z.ZodType<Args>, implementation: ReadOnlyTool<Args>): AnyTeamTool {
  return defineTool({
    name,
    description: describedBy(schema),
    args: schema,
    level: 'A0',
    run: (args, place) => implementation.run(args, envOf(place)),
    observe: asObservation,
    access: accessOf(name),
  });
}

function settledBuiltIn<Args, Intent>(
  name: ToolName,
  schema: z.ZodType<Args>,
  implementation: SettledTool<Args, Intent, Observation>,
  maxDurationMs?: number,
) {
  const level = CATALOG[name].level;
  if (level === 'A0') throw new Error(`${name} is A0 in the catalog: it has a read-only implementation`);
  const prepare = implementation.prepare?.bind(implementation);
  const afterSettled = implementation.afterSettled?.bind(implementation);
  return defineTool<ToolName, z.ZodType<Args>, Observation, Intent>({
    name,
    description: describedBy(schema),
    args: schema,
    level,
    ...(maxDurationMs !== undefined ? { maxDurationMs } : {}),
    async plan(args, ctx) {
      const plan = await implementation.plan(args, envOf(ctx), { key: ctx.key });
      return plan.kind === 'answer' ? answer(plan.result) : plan.intent;
    },
    execute: (args, ctx) => implementation.execute(args, ctx.intent, envOf(ctx), ctx),
    ...(prepare ? { prepare: (args, ctx) => prepare(args, ctx.intent, envOf(ctx), { key: ctx.key, retried: ctx.retried }) } : {}),
    probe: (args, intent, ctx) => implementation.probe(args, intent, envOf(ctx), ctx),
    ...(afterSettled ? { afterSettled: (args, intent, at) => afterSettled(args, intent, at) } : {}),
    compensate: (args) => compensationFor(name, args as Record<string, unknown>),
    observe: asObservation,
    access: accessOf(name),
  }) as AnyTeamTool;
}

/**
 * spawn_subagent: its arguments and level are a definition's, so the registry reserves its name
 * and describes it like any tool; its execution is a child workflow the trajectory starts
 * (workflows/subagent.ts). An activity never runs it: the worker refuses it before `execute`.
 */
export const spawnSubagentTool = lazy(() =>
  defineTool({
    name: SPAWN_SUBAGENT,
    description: 'Starts a sub-agent: a child trajectory with a narrower capability, attenuated from this one.',
    args: spawnSubagentArgs(),
    level: 'A2',
    // Its scripted turns are trajectory input (core/trajectory-input.ts): each call in them is
    // validated against its own tool's model when the sub-agent runs it, not here.
    accept: [
      {
        rule: 'bounded-types',
        pointer: '/parameters/properties/turns/items/properties/turn',
        reason: 'a turn number, bounded by the turn count',
      },
      {
        rule: 'untyped-bag',
        pointer: '/parameters/properties/turns/items/properties/calls/items/properties/args/additionalProperties',
        reason: "a scripted call's arguments, validated by that call's tool when the sub-agent runs it",
      },
      {
        rule: 'bounded-types',
        pointer: '/parameters/properties/turns/items/properties/calls/items/properties/args/propertyNames',
        reason: "a scripted call's argument names, checked by that call's tool",
      },
    ],
    execute: () => Promise.reject(new NoEffect(`${SPAWN_SUBAGENT} runs as a child workflow of its trajectory, never as an activity`)),
  }),
);

/**
 * The built-ins a team's own workflow may call through settled() (workflows/team-calls.ts): they
 * need no workspace, only a capability. The file and shell tools need a trajectory's workspace.
 */
export const WORKSPACE_FREE_BUILT_INS: ReadonlySet<string> = WORKSPACE_FREE_TOOLS;

/**
 * The built-ins a team's workflow may call, as a type: `settled<typeof teamTools | BuiltIns>()`
 * (docs/plugin.md). Their implementations stay on the worker: every worker registers them.
 */
export type BuiltIns = {
  readonly [HTTP_REQUEST]: typeof httpRequest;
};

/** The catalog's tools, one definition each. */
export const builtInTools = lazy((): Record<ToolName, AnyTeamTool> => ({
  [BASH_EXECUTE]: settledBuiltIn(BASH_EXECUTE, bashExecuteArgs(), bashExecute),
  [FILE_EDIT]: settledBuiltIn(FILE_EDIT, fileEditArgs(), fileEdit, FILE_TOOL_MAX_MS),
  [FILE_VIEW]: readOnly(FILE_VIEW, fileViewArgs(), fileView),
  [GREP_SEARCH]: readOnly(GREP_SEARCH, grepSearchArgs(), grepSearch),
  // Written as a team's tool would be (docs/http-request.md); its capability mapping is the catalog's.
  [HTTP_REQUEST]: defineTool({ ...httpRequest, access: accessOf(HTTP_REQUEST) }) as AnyTeamTool,
}));

/** The built-ins a team's workflow may call (WORKSPACE_FREE_BUILT_INS), as their definitions. */
export function workspaceFreeBuiltIns(): AnyTeamTool[] {
  return Object.values(builtInTools()).filter((tool) => WORKSPACE_FREE_BUILT_INS.has(tool.name));
}
