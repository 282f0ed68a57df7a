/** Small statistics for the benchmarks. */
export function median(xs: number[]): number {
  return quantile(xs, 0.5);
}

/** Nearest-rank quantile (q in [0, 1]). */
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function spread(xs: number[]): { min: number; median: number; max: number } {
  return { min: Math.min(...xs), median: median(xs), max: Math.max(...xs) };
}

export const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * Every order of three sides, to cycle through, so each side runs first, second and third equally
 * often and follows each other side equally often.
 */
export function orders<T>([a, b, c]: readonly [T, T, T]): T[][] {
  return [
    [a, b, c],
    [b, c, a],
    [c, a, b],
    [a, c, b],
    [b, a, c],
    [c, b, a],
  ];
}
