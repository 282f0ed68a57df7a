/** One measured figure of `npm run bench`, as written to bench/results.json. */
export interface Figure {
  /** Which benchmark: store, keys, capability, cli, e2e, scale. */
  group: string;
  figure: string;
  value: number;
  unit: string;
  /** For a ratio: what the denominator is. */
  against?: string;
  /** Rounds, spreads, breakdowns: whatever explains the value. */
  detail?: Record<string, unknown>;
}
