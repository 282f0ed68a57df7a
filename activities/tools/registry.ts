/**
 * The tools a worker runs: settle's built-ins plus the team's own definitions (docs/plugin.md).
 * Levels, probe support and argument validation of every call come from here, on the worker.
 */
import type { z } from 'zod';
import { SPAWN_SUBAGENT } from '../../core/capability/subagent';
import { CATALOG, isToolName, levelAtLeast, type SideEffectLevel } from '../../core/tools/catalog';
import { lintDocument } from '../../core/lint/index';
import type { Observation } from '../../core/observation';
import type { SettledTool } from '../settled/settled-tool';
import { TOOL_IMPLEMENTATIONS, type ToolImplementation } from './index';
import { publishTeamTool, readOnlyToolOf, settledToolOf, type AnyTeamTool } from './team-tool';

/** One tool as the worker runs it. */
export interface RegisteredTool {
  implementation: ToolImplementation;
  level: SideEffectLevel;
  /** Whether a probe can settle an in-doubt call (else an operator must). */
  probes: boolean;
  args: () => z.ZodType;
  /** A team's tool (true), or one of settle's built-ins. */
  team: boolean;
}

export interface RegistryOptions {
  /** The operator's levels for team tools, by name: may raise a definition's level, never lower it. */
  levels?: Readonly<Record<string, SideEffectLevel>>;
}

export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();

  /** Built-ins only: what a worker without team tools runs. */
  static builtIn(): ToolRegistry {
    return new ToolRegistry([]);
  }

  /**
   * Registers the team's definitions next to the built-ins. Throws a one-line error for a
   * duplicate name, a name a built-in has, a lowered level, or a `settle lint` finding the
   * definition does not accept with a reason.
   */
  constructor(teamTools: readonly AnyTeamTool[], options: RegistryOptions = {}) {
    for (const name of Object.keys(CATALOG) as (keyof typeof CATALOG)[]) {
      const entry = CATALOG[name];
      this.tools.set(name, {
        implementation: TOOL_IMPLEMENTATIONS[name],
        level: entry.level,
        probes: entry.probe !== false,
        args: entry.args,
        team: false,
      });
    }
    for (const tool of teamTools) {
      if (tool?.__settleTool !== true) throw new Error('SettlePlugin tools: every tool must be made by defineTool');
      if (isToolName(tool.name) || tool.name === SPAWN_SUBAGENT) {
        throw new Error(`SettlePlugin tools: ${tool.name} is a built-in tool's name; a team tool may not shadow it`);
      }
      if (this.tools.has(tool.name)) throw new Error(`SettlePlugin tools: ${tool.name} is defined twice`);
      lintTeamTool(tool);
      const level = levelFor(tool, options.levels?.[tool.name]);
      if (level === 'A0' && tool.level !== 'A0') throw new Error(`SettlePlugin levels: ${tool.name} cannot run at A0`);
      if (level !== 'A0' && tool.level === 'A0') {
        throw new Error(`SettlePlugin levels: ${tool.name} is read-only (A0, run); raising it needs execute and probe`);
      }
      const schema = tool.args;
      this.tools.set(tool.name, {
        implementation:
          tool.level === 'A0' ? { kind: 'read-only', tool: readOnlyToolOf(tool) } : { kind: 'settled', tool: settledToolOf(tool) },
        level,
        probes: tool.level !== 'A0' && tool.probe !== undefined,
        args: () => schema,
        team: true,
      });
    }
    for (const name of Object.keys(options.levels ?? {})) {
      if (!this.tools.get(name)?.team) throw new Error(`SettlePlugin levels: ${name} is not a team tool of this worker`);
    }
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  /** Every tool name this worker runs (built-ins and team tools). */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /* eslint-disable-next-line @typescript-eslint/no-explicit-any -- a heterogeneous registry */
  settled(name: string): SettledTool<any, any, Observation> | undefined {
    const tool = this.tools.get(name);
    return tool?.implementation.kind === 'settled' ? tool.implementation.tool : undefined;
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
