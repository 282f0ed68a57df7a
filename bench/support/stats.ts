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
