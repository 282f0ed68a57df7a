/**
 * The tools a worker runs, one kind of entry for all: settle's built-ins and the team's own, each
 * a `defineTool` definition (built-in.ts, docs/plugin.md). Levels, probe support and argument
 * validation of every call come from here, on the worker.
 */
import { SPAWN_SUBAGENT } from '../../core/capability/subagent';
import { isToolName, levelAtLeast, type SideEffectLevel } from '../../core/tools/catalog';
import { lintDocument } from '../../workbench/lint/index';
import { ACTIVITY_LANE, laneFor, type Lane, type LaneChoice } from '../../core/tools/lanes';
import type { Observation } from '../../core/observation';
import type { SettledTool } from '../settled/settled-tool';
import { builtInTools, spawnSubagentTool, WORKSPACE_FREE_BUILT_INS } from './built-in';
import type { ReadOnlyTool } from './read-only-tool';
import { publishTeamTool, readOnlyToolOf, settledToolOf, type AnyTeamTool } from './team-tool';

/** One tool as the worker runs it: its definition, and the level the worker's operator set. */
export interface RegisteredTool {
  definition: AnyTeamTool;
  level: SideEffectLevel;
  /** Whether a probe can settle an in-doubt call (else an operator must). */
  probes: boolean;
  /** One of settle's built-ins (the catalog's tools, spawn_subagent), or a team's tool. */
  builtIn: boolean;
  /** Where the call runs: an activity, or (spawn_subagent) the trajectory's child workflow. */
  runsIn: 'activity' | 'workflow';
  /**
   * Whether its calls need a trajectory's workspace (the file and shell built-ins, spawn_subagent):
   * those run only in settle's trajectory workflow. A team's tools and http_request need none, so
   * a team's own workflow calls them through settled().
   */
  needsWorkspace: boolean;
  /** Where its calls run: the local lane (bounded) or the activity lane (core/tools/lanes.ts). */
  lane: LaneChoice;
}

export interface RegistryOptions {
  /** The operator's levels for team tools, by name: may raise a definition's level, never lower it. */
  levels?: Readonly<Record<string, SideEffectLevel>>;
  /** The operator's lanes, by tool name (built-ins and team tools): override what the definitions' maxDurationMs decides. */
  lanes?: Readonly<Record<string, Lane>>;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- a heterogeneous registry: each tool validates its own argument type */
type Runnable = { kind: 'read-only'; tool: ReadOnlyTool<any> } | { kind: 'settled'; tool: SettledTool<any, any, Observation> };
/* eslint-enable @typescript-eslint/no-explicit-any */

export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();
  private readonly runnables = new Map<string, Runnable>();

  /** Built-ins only: what a worker without team tools runs. */
  static builtIn(): ToolRegistry {
    return new ToolRegistry([]);
  }

  /**
   * Registers the team's definitions next to the built-ins, every one checked the same way
   * (`settle lint`, levels). Throws a one-line error for a duplicate name, a name a built-in
   * has, a lowered level, or a `settle lint` finding the definition does not accept with a reason.
   */
  constructor(teamTools: readonly AnyTeamTool[], options: RegistryOptions = {}) {
    const lanes = options.lanes ?? {};
    for (const tool of Object.values(builtInTools())) this.register(tool, undefined, true, 'activity', lanes[tool.name]);
    this.register(spawnSubagentTool(), undefined, true, 'workflow', undefined);
    for (const tool of teamTools) {
      if (tool?.__settleTool !== true) throw new Error('SettlePlugin tools: every tool must be made by defineTool');
      if (isToolName(tool.name) || tool.name === SPAWN_SUBAGENT) {
        throw new Error(`SettlePlugin tools: ${tool.name} is a built-in tool's name; a team tool may not shadow it`);
      }
      if (this.tools.has(tool.name)) throw new Error(`SettlePlugin tools: ${tool.name} is defined twice`);
      this.register(tool, options.levels?.[tool.name], false, 'activity', lanes[tool.name]);
    }
    for (const name of Object.keys(lanes)) {
      const registered = this.tools.get(name);
      if (!registered || registered.runsIn !== 'activity')
        throw new Error(`SettlePlugin lanes: ${name} is not a tool an activity of this worker runs`);
    }
    for (const name of Object.keys(options.levels ?? {})) {
      const registered = this.tools.get(name);
      if (!registered || registered.builtIn) throw new Error(`SettlePlugin levels: ${name} is not a team tool of this worker`);
    }
  }

  private register(
    tool: AnyTeamTool,
    operatorLevel: SideEffectLevel | undefined,
    builtIn: boolean,
    runsIn: RegisteredTool['runsIn'],
    lane: Lane | undefined,
  ): void {
    lintTeamTool(tool);
    const level = levelFor(tool, operatorLevel);
    if (level === 'A0' && tool.level !== 'A0') throw new Error(`SettlePlugin levels: ${tool.name} cannot run at A0`);
    if (level !== 'A0' && tool.level === 'A0') {
      throw new Error(`SettlePlugin levels: ${tool.name} is read-only (A0, run); raising it needs execute and probe`);
    }
    this.tools.set(tool.name, {
      definition: tool,
      level,
      probes: tool.level !== 'A0' && tool.probe !== undefined,
      builtIn,
      runsIn,
      needsWorkspace: builtIn && !WORKSPACE_FREE_BUILT_INS.has(tool.name),
      lane: runsIn === 'activity' ? laneFor(tool.maxDurationMs, lane) : ACTIVITY_LANE,
    });
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  /** The lane of each tool an activity runs: what a workflow asks once per run (laneTable). */
  lanes(): Record<string, LaneChoice> {
    const table: Record<string, LaneChoice> = {};
    for (const [name, registered] of this.tools) if (registered.runsIn === 'activity') table[name] = registered.lane;
    return table;
  }

  /** Every tool name this worker runs (built-ins and team tools). */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** How the activities run a registered tool (made once per tool, on first use). */
  runnable(name: string): Runnable | undefined {
    const known = this.runnables.get(name);
    if (known) return known;
    const registered = this.tools.get(name);
    if (!registered) return undefined;
    const { definition } = registered;
    const runnable: Runnable =
      definition.level === 'A0'
        ? { kind: 'read-only', tool: readOnlyToolOf(definition) }
        : { kind: 'settled', tool: settledToolOf(definition) };
    this.runnables.set(name, runnable);
    return runnable;
  }
}

/** The definition's level, or the operator's when higher; a lower one is refused. */
function levelFor(tool: AnyTeamTool, operator: SideEffectLevel | undefined): SideEffectLevel {
  if (operator === undefined) return tool.level;
  if (!levelAtLeast(operator, tool.level)) {
    throw new Error(
      `SettlePlugin levels: ${tool.name} is ${tool.level} by its definition; the operator may raise it, not lower it to ${operator}`,
    );
  }
  return operator;
}

/** `settle lint`'s rules over the published definition; a finding not accepted with a reason refuses it. */
function lintTeamTool(tool: AnyTeamTool): void {
  const { findings } = lintDocument(publishTeamTool(tool)); // pointers relative to the published definition
  const accepted = tool.accept ?? [];
  const refused = findings.filter((f) => !accepted.some((a) => a.rule === f.rule && (a.pointer === undefined || a.pointer === f.pointer)));
  if (refused.length > 0) {
    const first = refused[0]!;
    throw new Error(
      `SettlePlugin tools: ${tool.name} breaks settle lint's rule ${first.rule} at ${first.pointer || '""'}: ${first.message}; fix: ${first.hint}` +
        (refused.length > 1 ? ` (and ${refused.length - 1} more finding(s))` : '') +
        "; fix it, or list it in the definition's accept with a reason",
    );
  }
}
