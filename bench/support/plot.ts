/**
 * The scale plot for the README: an SVG drawn here (three panels: calls/s, CPU per call, p99
 * latency, each side — settle's local and activity lanes, plain — over the concurrency levels), rendered to PNG by Debian's
 * rsvg-convert (librsvg2-bin) or, failing that, headless Chromium. No network.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScaleRow } from '../e2e';

const OUT = fileURLToPath(new URL('../scale.png', import.meta.url));

interface Panel {
  title: string;
  unit: string;
  value: (r: ScaleRow) => number;
}

const PANELS: Panel[] = [
  { title: 'throughput', unit: 'calls/s', value: (r) => r.callsPerSecond },
  {
    title: 'CPU per call (server + worker + Postgres)',
    unit: 'ms',
    value: (r) => r.cpuMsPerCall.server + r.cpuMsPerCall.worker + r.cpuMsPerCall.postgres,
  },
  { title: 'call latency p99', unit: 'ms', value: (r) => r.p99Ms },
];
const SERIES = [
  { side: 'settled-local', label: 'settle, local lane', color: '#1f6feb' },
  { side: 'settled', label: 'settle, activity lane', color: '#8250df' },
  { side: 'plain', label: 'plain Temporal', color: '#9a6700' },
] as const;

export function scaleSvg(rows: ScaleRow[]): string {
  const levels = [...new Set(rows.map((r) => r.trajectories))].sort((a, b) => a - b);
  const W = 320;
  const H = 240;
  const pad = { l: 52, r: 12, t: 34, b: 40 };
  const parts: string[] = [];
  PANELS.forEach((panel, i) => {
    const x0 = i * W;
    const max = Math.max(...rows.map(panel.value)) * 1.15 || 1;
    const xOf = (level: number) => x0 + pad.l + ((W - pad.l - pad.r) * levels.indexOf(level)) / Math.max(1, levels.length - 1);
    const yOf = (v: number) => pad.t + (H - pad.t - pad.b) * (1 - v / max);
    parts.push(`<text x="${x0 + W / 2}" y="18" text-anchor="middle" font-size="13" font-weight="bold">${panel.title}</text>`);
    parts.push(`<line x1="${x0 + pad.l}" y1="${H - pad.b}" x2="${x0 + W - pad.r}" y2="${H - pad.b}" stroke="#888"/>`);
    parts.push(`<line x1="${x0 + pad.l}" y1="${pad.t}" x2="${x0 + pad.l}" y2="${H - pad.b}" stroke="#888"/>`);
    for (let k = 0; k <= 4; k++) {
      const v = (max * k) / 4;
      parts.push(
        `<text x="${x0 + pad.l - 4}" y="${yOf(v) + 4}" text-anchor="end" font-size="10">${v >= 100 ? Math.round(v) : v.toFixed(1)}</text>`,
      );
      parts.push(`<line x1="${x0 + pad.l}" y1="${yOf(v)}" x2="${x0 + W - pad.r}" y2="${yOf(v)}" stroke="#eee"/>`);
    }
    for (const level of levels) {
      parts.push(`<text x="${xOf(level)}" y="${H - pad.b + 14}" text-anchor="middle" font-size="10">${level}</text>`);
    }
    parts.push(
      `<text x="${x0 + (W + pad.l) / 2}" y="${H - 8}" text-anchor="middle" font-size="10">concurrent trajectories (× 10 calls) · ${panel.unit}</text>`,
    );
    for (const { side, color } of SERIES) {
      const pts = levels.flatMap((level) => {
        const r = rows.find((x) => x.side === side && x.trajectories === level);
        return r ? [[xOf(level), yOf(panel.value(r))] as const] : [];
      });
      if (pts.length === 0) continue;
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map(([x, y]) => `${x},${y}`).join(' ')}"/>`);
      for (const [x, y] of pts) parts.push(`<circle cx="${x}" cy="${y}" r="3" fill="${color}"/>`);
    }
  });
  SERIES.forEach(({ label, color }, i) => {
    const x = W * 3 - 470 + i * 160;
    parts.push(
      `<rect x="${x}" y="${H + 4}" width="10" height="10" fill="${color}"/><text x="${x + 14}" y="${H + 13}" font-size="11">${label}</text>`,
    );
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W * 3}" height="${H + 20}" font-family="DejaVu Sans, sans-serif">` +
    `<rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>`
  );
}

/** Writes bench/scale.svg and bench/scale.png; returns the PNG's path. */
export function writeScalePlot(rows: ScaleRow[]): string {
  const svgPath = OUT.replace(/\.png$/, '.svg');
  fs.writeFileSync(svgPath, scaleSvg(rows));
  try {
    execFileSync('rsvg-convert', ['-o', OUT, svgPath]);
  } catch {
    const html = path.join(path.dirname(OUT), '.scale-plot.html');
    fs.writeFileSync(html, `<html><body style="margin:0">${fs.readFileSync(svgPath, 'utf8')}</body></html>`);
    try {
      execFileSync(
        'chromium',
        ['--headless', '--no-sandbox', '--disable-gpu', `--screenshot=${OUT}`, '--window-size=960,260', `file://${html}`],
        {
          stdio: 'ignore',
        },
      );
    } finally {
      fs.rmSync(html, { force: true });
    }
  }
  return OUT;
}
