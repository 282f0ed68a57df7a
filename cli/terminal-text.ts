/**
 * Text from trajectories (model-chosen call ids, tool names, trajectory ids, details) printed to
 * an operator's terminal, escaped as core/printable.ts says; and the variants for blocks and values.
 */
import { printable } from '../core/printable';

export { printable };

/**
 * `printable` for a block of text meant to be read as lines (a trajectory's details: commands in
 * a code block): line breaks stay line breaks, every other control character is escaped.
 */
export function printableLines(text: string): string {
  return text.split(/\r?\n/).map(printable).join('\n');
}

/** `printable` for any value shown as text (numbers, nulls, dates pass through String()). */
export function printableValue(value: unknown): string {
  return printable(value instanceof Date ? value.toISOString() : String(value));
}
