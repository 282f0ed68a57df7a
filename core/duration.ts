/** Durations on the command line: `30m`, `24h`, `7d` — an integer and one unit, nothing else. */
import { InputError } from './errors';

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

export function parseDurationMs(text: string, field: string): number {
  const m = /^([1-9]\d{0,8})(s|m|h|d|w)$/.exec(text);
  if (!m)
    throw new InputError(
      field,
      `be a duration like 30m, 24h or 7d (an integer ≥ 1 followed by s, m, h, d or w; got ${JSON.stringify(text)})`,
    );
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}
