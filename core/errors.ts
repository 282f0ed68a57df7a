/**
 * Bad input is reported as one of these: the field that was wrong and the rule it broke,
 * so a CLI can print one line and an observation can tell a model what to fix.
 */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(
    /** Dotted/JSON-pointer-ish location of the offending value, e.g. `args.path` or `turn`. */
    readonly field: string,
    /** The rule that was broken, phrased so it can follow "must": e.g. "be an integer ≥ 0". */
    readonly rule: string,
  ) {
    super(`${field} must ${rule}`);
  }
}

/** Whatever was thrown, as an Error (a thrown string or object becomes the Error's message). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** What went wrong, for a log line or an observation: an Error's message, or whatever was thrown, as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
