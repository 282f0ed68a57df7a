/**
 * What an approval lets run, as an operator reads it before approving: the call's whole arguments
 * as JSON, never a summary (a summary cut at a length hid an appended `>> effects.log`). JSON
 * shows a line break or a quote inside a value as what it is; `printable` then escapes what JSON
 * leaves raw and a reader could not see (C1 controls, bidirectional overrides).
 */
import { printable } from './terminal-text';

export function approvalArgsText(args: Record<string, unknown>): string {
  return printable(JSON.stringify(args));
}
