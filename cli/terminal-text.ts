/**
 * Text from trajectories (model-chosen call ids, tool names, trajectory ids, details) printed to
 * an operator's terminal: control characters are shown escaped, never sent raw. A raw ESC or CSI
 * could recolour, retitle or rewrite the operator's screen, or hide a line (issue 12, item 13).
 *
 * Escaped: C0 controls (tab and newline too: one value, one line), DEL, C1 controls (8-bit CSI
 * U+009B is an escape on many terminals), and the bidirectional overrides and isolates that can
 * make text read differently from what it is.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

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
