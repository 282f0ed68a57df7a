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
 * Orders of the sides to cycle through (a Williams design): each side runs at each position
 * equally often and follows each other side equally often — n orders for an even number of
 * sides, 2n for an odd one (for three: all six).
 */
export function orders<T>(sides: readonly T[]): T[][] {
  const n = sides.length;
  // First row 0, 1, n-1, 2, n-2, …; the others shift it by one each.
  const first = Array.from({ length: n }, (_, j) => (j === 0 ? 0 : j % 2 === 1 ? (j + 1) / 2 : n - j / 2));
  const rows = Array.from({ length: n }, (_, i) => first.map((k) => sides[(k + i) % n]!));
  return n % 2 === 0 ? rows : [...rows, ...rows.map((r) => [...r].reverse())];
}
