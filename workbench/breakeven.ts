/**
 * When constrained decoding pays off (source formula 1). Free sampling costs a repair round
 * (T_repair) with probability p_err; constraining costs t_mask on each of L_gen tokens. Equal
 * when p_err = L_gen · t_mask / T_repair; above that rate, constraining is cheaper.
 */
import { InputError } from '../core/errors';

export interface BreakEvenInput {
  /** L_gen: output tokens in one tool call. */
  genTokens: number;
  /** t_mask: time the grammar mask adds per token, in milliseconds. */
  maskMs: number;
  /** T_repair: latency of one repair round (resend context, regenerate the call), in milliseconds. */
  repairMs: number;
}

/** p_break = L_gen · t_mask / T_repair, a fraction (0.0222… for 80 tokens, 0.5 ms, 1800 ms). */
export function breakEvenRate({ genTokens, maskMs, repairMs }: BreakEvenInput): number {
  if (!Number.isInteger(genTokens) || genTokens < 1) throw new InputError('gen_tokens', `be an integer ≥ 1 (got ${genTokens})`);
  if (!Number.isFinite(maskMs) || maskMs < 0) throw new InputError('mask_ms', `be a number ≥ 0 (got ${maskMs})`);
  if (!Number.isFinite(repairMs) || repairMs <= 0) throw new InputError('repair_ms', `be a number > 0 (got ${repairMs})`);
  return (genTokens * maskMs) / repairMs;
}

/** Constraining is cheaper when the measured malformed rate exceeds the break-even rate. */
export function constrainedDecodingPaysOff(malformedRate: number, pBreak: number): boolean {
  return malformedRate > pBreak;
}
