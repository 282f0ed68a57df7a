/**
 * What a team's workflow asks the worker's registry about its own tools' calls (api/workflow.ts
 * runs these as local activities, so their answers are in history and replay never asks again).
 */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../../core/failures';
import { errorMessage } from '../../core/errors';
import type { SideEffectLevel } from '../../core/tools/catalog';
import type { LaneChoice } from '../../core/tools/lanes';
import { WORKSPACE_FREE_BUILT_INS } from '../tools/built-in';
import type { ToolCompensation } from '../tools/team-tool';
import { checkedCall } from './checked-call';
import type { ActivityContext } from './context';

/** A team tool's call as the worker's registry checked it (describeTeamCall). */
export interface DescribedTeamCall {
  /** The arguments as they will execute (parsed by the tool's schema): the key is derived from these. */
  args: Record<string, unknown>;
  level: SideEffectLevel;
  /** Whether a probe can settle an in-doubt call; without one it waits for an operator. */
  probes: boolean;
  /** Where its attempts run (the worker's lane for the tool; histories from before lanes have none). */
  lane: LaneChoice;
}

export function teamCallActivities({ registry, ownWorkspace }: ActivityContext) {
  return {
    /**
     * A team tool's call from a team's workflow: the arguments validated by the worker's
     * registry, the tool's level, whether it has a probe, and its lane. Refuses (non-retryable)
     * an unknown tool, spawn_subagent, a built-in that needs a workspace on a worker without one
     * of its own (it runs in settle's trajectory), a workspace-free built-in (http_request)
     * without a capability, and invalid arguments, naming the field.
     */
    async describeTeamCall(input: { tool: string; args: unknown; capability?: boolean }): Promise<DescribedTeamCall> {
      const registered = registry.get(input.tool);
      if (!registered || registered.runsIn === 'workflow' || (registered.needsWorkspace && !ownWorkspace)) {
        throw ApplicationFailure.nonRetryable(
          registered
            ? `${input.tool} is a built-in tool that needs a workspace: it runs in settle's trajectory workflow ` +
                `(a team workflow's settled() calls its own tools and ${[...WORKSPACE_FREE_BUILT_INS].join(', ')})`
            : `unknown tool ${input.tool} (not registered on this worker)`,
          FAILURE.UnknownTool,
        );
      }
      // A workspace-free built-in's reach is the capability's objects alone (http_request: its host:
      // objects); without one it could reach nothing, so it is refused here, before anything is
      // claimed or sent. The workspace built-ins reach the operator's workspace, as a trajectory's do.
      if (registered.builtIn && !registered.needsWorkspace && input.capability !== true) {
        throw ApplicationFailure.nonRetryable(
          `${input.tool} needs a capability: pass settled({ capability }) one with the connect right and ` +
            'host: objects for the hosts it calls (settle cap mint)',
          FAILURE.CapabilityRequired,
        );
      }
      const { args } = checkedCall(registry, input.tool, input.args, registered.level === 'A0' ? 'read-only' : 'settled');
      return { args, level: registered.level, probes: registered.probes, lane: registered.lane };
    },

    /** The lane of every tool this worker runs as an activity (a trajectory asks once per run, as a local activity). */
    async laneTable(): Promise<Record<string, LaneChoice>> {
      return registry.lanes();
    },

    /** How a completed call of a team tool is undone (its definition's `compensate`): another call, or why there is none. */
    async describeCompensation(input: { tool: string; args: Record<string, unknown> }): Promise<ToolCompensation> {
      const definition = registry.get(input.tool)?.definition;
      if (!definition || definition.level === 'A0' || !definition.compensate) {
        return { kind: 'none', reason: `${input.tool} declares no compensator` };
      }
      try {
        const plan = definition.compensate(input.args);
        if (plan?.kind === 'call' && typeof plan.tool === 'string' && typeof plan.args === 'object' && plan.args !== null) return plan;
        if (plan?.kind === 'none' && typeof plan.reason === 'string') return plan;
        return { kind: 'none', reason: `${input.tool}'s compensate must return { kind: 'call', tool, args } or { kind: 'none', reason }` };
      } catch (err) {
        return { kind: 'none', reason: `${input.tool}'s compensate failed: ${errorMessage(err)}` };
      }
    },
  };
}
