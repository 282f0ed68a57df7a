/**
 * CLI start-up: wall time of `settle key …` and `settle canonicalize` (bin/settle.js, tsx loader)
 * against a bare `node -e 0`, interleaved runs, min and median. `settle --help` loads every
 * command group, which every command did before commands were loaded per command: `settle key`
 * against it is the before/after of that change. Nothing is asserted.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Figure } from './support/figures';
import { median } from './support/stats';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/settle.js', import.meta.url));

const COMMANDS: { name: string; args: string[]; input?: string }[] = [
  { name: 'node -e 0', args: ['-e', '0'] },
  // The floor for any command: tsx's loader, no settle module.
  { name: 'node --import tsx -e 0', args: ['--import', 'tsx', '-e', '0'] },
  // Loads every command group, as every command did before per-command loading: the "before".
  { name: 'settle --help (every command group)', args: [BIN, '--help'] },
  {
    name: 'settle key',
    args: [
      BIN,
      'key',
      '--trajectory',
      't-1',
      '--turn',
      '0',
      '--call-id',
      'c1',
      '--tool',
      'file_edit',
      '--args',
      '{"path":"/ws/a.ts","old_str":"a","new_str":"b"}',
    ],
  },
  { name: 'settle canonicalize', args: [BIN, 'canonicalize'], input: '{"b":1,"a":[2,{"d":3,"c":4}]}' },
];

function timeOnce(c: (typeof COMMANDS)[number]): number {
  const start = performance.now();
  const r = spawnSync(process.execPath, c.args, { cwd: ROOT, input: c.input ?? '', encoding: 'utf8' });
  const ms = performance.now() - start;
  if (r.status !== 0) throw new Error(`${c.name} exited ${r.status}: ${r.stderr}`);
  return ms;
}

export function benchCliStartup(runs = 7): Figure[] {
  const times = new Map<string, number[]>(COMMANDS.map((c) => [c.name, []]));
  for (const c of COMMANDS) timeOnce(c); // warm the file cache
  for (let i = 0; i < runs; i++) for (const c of COMMANDS) times.get(c.name)!.push(timeOnce(c));
  const base = times.get('node -e 0')!;
  const figures: Figure[] = [];
  for (const c of COMMANDS) {
    const t = times.get(c.name)!;
    figures.push({
      group: 'cli',
      figure: `${c.name}: start-up wall time (median)`,
      value: Math.round(median(t)),
      unit: 'ms',
      detail: { min: Math.round(Math.min(...t)), median: Math.round(median(t)), runs },
    });
    if (c.name !== 'node -e 0') {
      figures.push({
        group: 'cli',
        figure: `${c.name} / node -e 0 (median)`,
        value: Math.round((median(t) / median(base)) * 100) / 100,
        unit: '×',
        against: 'node -e 0',
        detail: { minRatio: Math.round((Math.min(...t) / Math.min(...base)) * 100) / 100 },
      });
    }
  }
  return figures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const f of benchCliStartup()) console.log(`${f.figure.padEnd(48)} ${String(f.value).padStart(8)} ${f.unit}`);
}
