/** The source text's two formulas with its own numbers, and the duration syntax of --since. */
import { describe, expect, it } from 'vitest';
import { InputError } from '../../core/errors';
import { breakEvenRate, constrainedDecodingPaysOff } from '../../workbench/breakeven';
import { catalogCost, catalogTokens, compareCatalogCost } from '../../workbench/catalog-cost';
import { parseDurationMs } from '../../core/duration';
import { definitionText, ENCODING } from '../../workbench/tokens';
import { tokenCounter } from '../../cli/token-counter';

describe('formula 1: break-even malformed rate', () => {
  it('80 tokens × 0.5 ms / 1800 ms = 40 ms / 1800 ms ≈ 2.22 %', () => {
    const p = breakEvenRate({ genTokens: 80, maskMs: 0.5, repairMs: 1800 });
    expect(p).toBeCloseTo(40 / 1800, 12);
    expect((p * 100).toFixed(2)).toBe('2.22');
    // "more often than about once in forty calls"
    expect(Math.round(1 / p)).toBe(45);
  });

  it('constraining pays off only above the break-even rate', () => {
    const p = breakEvenRate({ genTokens: 80, maskMs: 0.5, repairMs: 1800 });
    expect(constrainedDecodingPaysOff(1 / 40, p)).toBe(true);
    expect(constrainedDecodingPaysOff(1 / 50, p)).toBe(false);
    expect(constrainedDecodingPaysOff(p, p)).toBe(false);
  });

  it.each([
    [{ genTokens: 0, maskMs: 0.5, repairMs: 1800 }, 'gen_tokens must be an integer ≥ 1'],
    [{ genTokens: 1.5, maskMs: 0.5, repairMs: 1800 }, 'gen_tokens must be an integer ≥ 1'],
    [{ genTokens: 80, maskMs: -1, repairMs: 1800 }, 'mask_ms must be a number ≥ 0'],
    [{ genTokens: 80, maskMs: 0.5, repairMs: 0 }, 'repair_ms must be a number > 0'],
    [{ genTokens: 80, maskMs: Number.NaN, repairMs: 1 }, 'mask_ms must be a number ≥ 0'],
  ])('rejects %j', (input, message) => {
    expect(() => breakEvenRate(input)).toThrow(InputError);
    expect(() => breakEvenRate(input)).toThrow(message);
  });
});

describe('formula 2: catalog tokens per trajectory', () => {
  it('80 tools × 350 tokens × 40 turns = 1,120,000; 4 × 250 × 40 = 40,000, about 96 % less', () => {
    const specialised = catalogTokens({ turns: 40, tools: 80, meanTokens: 350 });
    const generic = catalogTokens({ turns: 40, tools: 4, meanTokens: 250 });
    expect(specialised).toBe(1_120_000);
    expect(generic).toBe(40_000);
    expect(specialised / 40).toBe(28_000); // per turn
    expect(generic / 40).toBe(1_000);
    const { difference, fractionLess } = compareCatalogCost(generic, specialised);
    expect(difference).toBe(1_080_000);
    expect(fractionLess).toBeCloseTo(0.9643, 4);
    expect(Math.round(fractionLess * 100)).toBe(96);
  });

  it('from measured definitions: K, mean S, per turn, per trajectory', () => {
    const cost = catalogCost([200, 300, 250, 250], 40);
    expect(cost).toEqual({ turns: 40, tools: 4, meanTokens: 250, perTurn: 1000, perTrajectory: 40_000 });
    expect(catalogCost([1, 2], 3).meanTokens).toBe(1.5);
    expect(compareCatalogCost(150, 100)).toEqual({ difference: -50, fractionLess: -0.5 });
  });

  it('rejects a trajectory without turns', () => {
    expect(() => catalogTokens({ turns: 0, tools: 4, meanTokens: 250 })).toThrow('turns must be an integer ≥ 1');
  });
});

describe('tokens', () => {
  it(`counts with the bundled ${ENCODING} ranks, offline`, async () => {
    const countTokens = await tokenCounter();
    expect(ENCODING).toBe('o200k_base');
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello world')).toBe(2);
    // The text counted for a definition is its compact JSON, key order as published.
    expect(definitionText({ name: 'a', parameters: { type: 'object' } })).toBe('{"name":"a","parameters":{"type":"object"}}');
  });
});

describe('--since durations', () => {
  it.each([
    ['30m', 30 * 60_000],
    ['24h', 24 * 3_600_000],
    ['7d', 7 * 86_400_000],
    ['45s', 45_000],
    ['2w', 14 * 86_400_000],
  ])('%s', (text, ms) => expect(parseDurationMs(text, '--since')).toBe(ms));

  it.each(['', '0h', '1.5h', '10', 'h', '-1d', '1y', '1 d', '01h'])('rejects %j naming the flag', (text) => {
    expect(() => parseDurationMs(text, '--since')).toThrow(/^--since must be a duration like 30m, 24h or 7d/);
  });
});
