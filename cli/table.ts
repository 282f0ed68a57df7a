import { printable } from './terminal-text';

/** Plain-text tables whose columns fit their longest value, so long ids and errors never shift the others. */

/** Renders `rows` under `headers`, columns separated by two spaces; the last column is not padded. */
export function formatTable(headers: readonly string[], rawRows: readonly (readonly string[])[]): string {
  // Cells come from trajectories (model-chosen call ids): control characters escaped (terminal-text.ts).
  const rows = rawRows.map((r) => r.map(printable));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}
