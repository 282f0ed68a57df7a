/**
 * How long `settle dev` waits before it starts a dead worker again: 1 s after a first death, then
 * doubling while the worker keeps dying soon after it starts (a broken build, a refused record
 * store), capped at 30 s so a fixed cause is picked up within half a minute.
 */
export const RESTART_BACKOFF = { firstMs: 1_000, maxMs: 30_000 } as const;

/** The delay before a restart, given how many times in a row the worker died young (0: it had run a while). */
export function restartDelayMs(consecutiveFailures: number): number {
  const exponent = Math.max(0, consecutiveFailures - 1);
  return Math.min(RESTART_BACKOFF.maxMs, RESTART_BACKOFF.firstMs * 2 ** Math.min(exponent, 20));
}
