export type { ProposedCall } from './trajectory-input';

/** A short description of what a call targets (its path, command or pattern), for summaries. */
export function describeArgs(args: Record<string, unknown>): string {
  const target = args.path ?? args.command ?? args.pattern;
  const text = typeof target === 'string' ? target : '';
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
