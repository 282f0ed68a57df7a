/**
 * Text from trajectories and upstream servers shown to an operator (a terminal, the Web UI's
 * details): control characters are shown escaped, never sent raw. A raw ESC or CSI could recolour,
 * retitle or rewrite the operator's screen, or hide a line.
 *
 * Escaped: C0 controls (tab and newline too: one value, one line), DEL, C1 controls (8-bit CSI
 * U+009B is an escape on many terminals), and the bidirectional overrides and isolates that can
 * make text read differently from what it is. Pure (workflow code uses it too).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
