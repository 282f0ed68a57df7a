/**
 * What a tool catalog costs in context (source formula 2): every definition is sent with every
 * turn, so a trajectory of N turns with K tools of S tokens each sends T = N · K · S tokens.
 */
import { InputError } from '../core/errors';

export interface CatalogSize {
  /** N: turns in the trajectory. */
  turns: number;
  /** K: tools in the catalog. */
  tools: number;
  /** S: mean tokens per definition. */
  meanTokens: number;
}

/** T_catalog = N · K · S (80 tools × 350 tokens × 40 turns = 1,120,000). */
export function catalogTokens({ turns, tools, meanTokens }: CatalogSize): number {
  if (!Number.isInteger(turns) || turns < 1) throw new InputError('turns', `be an integer ≥ 1 (got ${turns})`);
  if (!Number.isInteger(tools) || tools < 0) throw new InputError('tools', `be an integer ≥ 0 (got ${tools})`);
  if (!Number.isFinite(meanTokens) || meanTokens < 0) throw new InputError('mean_tokens', `be a number ≥ 0 (got ${meanTokens})`);
  return turns * tools * meanTokens;
}

export interface CatalogCost extends CatalogSize {
  /** K · S: definition tokens sent with every turn. */
  perTurn: number;
  /** N · K · S. */
  perTrajectory: number;
}

/** The cost of a catalog whose definitions measure `tokensPerDefinition` tokens each. */
export function catalogCost(tokensPerDefinition: number[], turns: number): CatalogCost {
  const tools = tokensPerDefinition.length;
  const perTurn = tokensPerDefinition.reduce((a, b) => a + b, 0);
  const meanTokens = tools === 0 ? 0 : perTurn / tools;
  // N · K · S computed as N · ΣS: the same number, without rounding the mean.
  catalogTokens({ turns, tools, meanTokens });
  return { turns, tools, meanTokens, perTurn, perTrajectory: turns * perTurn };
}

export interface CostComparison {
  /** T_other − T_this: tokens this catalog saves per trajectory (negative: it costs more). */
  difference: number;
  /** difference / T_other: 0.964… when 40,000 is compared with 1,120,000 ("about 96 % less"). */
  fractionLess: number;
}

export function compareCatalogCost(thisTokens: number, otherTokens: number): CostComparison {
  const difference = otherTokens - thisTokens;
  return { difference, fractionLess: otherTokens === 0 ? 0 : difference / otherTokens };
}
