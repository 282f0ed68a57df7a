/** `spawn_subagent` arguments: the sub-agent's task and the narrower capability it receives. */
import { z } from 'zod';
import { lazy } from '../lazy';
import { ScriptedTurnSchema } from '../trajectory-input';
import { ObjectSpec, RIGHTS } from './token';

export const SPAWN_SUBAGENT = 'spawn_subagent';

/** Built on first use (core/lazy.ts). */
export const spawnSubagentArgs = lazy(() => {
  return z
    .object({
      task: z.string().min(1).max(10_000).describe('What the sub-agent must do (its first user message when model-driven).'),
      rights: z.array(z.enum(RIGHTS)).min(1).max(4).describe('Rights for the sub-agent; a subset of this trajectory’s.'),
      objects: z
        .array(ObjectSpec())
        .min(1)
        .max(16)
        .describe('Objects for the sub-agent, each within one of this trajectory’s (e.g. path:/ws/sub).'),
      max_cost: z.number().int().min(0).max(1_000_000).describe('Per-call cost ceiling in cost units; at most this trajectory’s.'),
      budget: z
        .number()
        .int()
        .min(0)
        .max(1_000_000_000)
        .describe('Total cost units, reserved from this trajectory’s remaining budget; unspent units return.'),
      expires_in_ms: z
        .number()
        .int()
        .min(1000)
        .max(7 * 24 * 3600_000)
        .describe('Lifetime in milliseconds, capped at this trajectory’s expiry.'),
      turns: z
        .array(ScriptedTurnSchema())
        .max(1000)
        .optional()
        .describe('Scripted turns for the sub-agent; absent: it is model-driven with this trajectory’s model.'),
    })
    .strict();
});

export type SpawnSubagentArgs = z.output<ReturnType<typeof spawnSubagentArgs>>;
