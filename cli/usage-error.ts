/** Bad command-line input: printed as one line naming the argument and the rule; exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
