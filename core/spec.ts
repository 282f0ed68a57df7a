/**
 * `settle start SPEC.json`: what a trajectory spec may contain, validated before anything starts.
 */
import { z } from 'zod';
import { CapabilityToken } from './capability/token';

const Call = z
  .object({ call_id: z.string().min(1).max(255), tool: z.string().min(1).max(64), args: z.record(z.string(), z.unknown()) })
  .strict();
const Level = z.enum(['A0', 'A1', 'A2', 'A3']);

export const TrajectorySpec = z
  .object({
    trajectory_id: z.string().min(1).max(255).describe('Workflow id of the trajectory; part of every key.'),
    workspace: z.string().min(2).max(1024).regex(/^\//).describe('Absolute path of the workspace directory.'),
    turns: z
      .array(z.object({ turn: z.number().int().min(0), calls: z.array(Call).min(1).max(64) }).strict())
      .max(10_000)
      .optional(),
    model: z
      .object({
        base_url: z.string().url(),
        model: z.string().min(1).max(200),
        api_key_env: z
          .string()
          .regex(/^[A-Z_][A-Z0-9_]*$/)
          .optional(),
        system: z.string().max(100_000).optional(),
        task: z.string().min(1).max(100_000),
        max_turns: z.number().int().min(1).max(1000).optional(),
        max_total_tokens: z.number().int().min(1).optional(),
      })
      .strict()
      .optional(),
    level_overrides: z.record(z.string(), Level).optional(),
    approval_timeout_ms: z
      .number()
      .int()
      .min(1000)
      .max(30 * 24 * 3600_000)
      .optional(),
    lease_ms: z.number().int().min(500).max(3_600_000).optional(),
    network: z.boolean().optional(),
    /** hmac: keys keyed with the worker's SETTLE_KEY_SECRET (docs/design.md#key-derivation). Default sha256. */
    key_mode: z.enum(['sha256', 'hmac']).optional(),
    /** The signed capability token (`settle cap mint --out FILE` prints one), audience = trajectory_id. */
    capability: CapabilityToken.optional(),
  })
  .strict()
  .refine((s) => !(s.turns && s.model), { message: 'give either turns or model, not both', path: ['model'] })
  .refine((s) => !s.capability || s.capability.body.aud === s.trajectory_id, {
    message: 'be issued to trajectory_id (its body.aud)',
    path: ['capability'],
  });

export type TrajectorySpec = z.output<typeof TrajectorySpec>;
