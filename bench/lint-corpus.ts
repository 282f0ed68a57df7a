/**
 * `npm run lint-corpus`: `settle lint` over real public tool catalogs (bench/lint-corpus/),
 * scored against hand labels.
 *
 * Each catalog is linted by the real command in its own process (`settle lint --json FILE`) with
 * a time limit, so a crash (exit other than 0 or 1), a refusal (exit 2) or a hang is caught as
 * such. Then: findings per rule per catalog, and per rule precision = TP / (TP + FP) and recall
 * = TP / (TP + FN) against bench/lint-corpus/labels.json, where every finding is labelled `tp`
 * or `fp` and a `tp` label the linter did not produce is a false negative.
 *
 * Exit 1 on a crash, refusal or hang; 2 when a finding has no label (label it, so the figures
 * stay honest); 0 otherwise. The 0.95 precision target is reported, not enforced.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RULE_IDS, type Finding, type RuleId } from '../workbench/lint/index';

const ROOT = fileURLToPath(new URL('./lint-corpus/', import.meta.url));
const SETTLE = fileURLToPath(new URL('../bin/settle.js', import.meta.url));
const TIME_LIMIT_MS = 120_000;
const PRECISION_TARGET = 0.95;

interface ManifestEntry {
  catalog: string;
  file: string;
  source: Record<string, unknown>;
  license: string;
}

interface Label {
  catalog: string;
  tool: string;
  rule: RuleId;
  pointer: string;
  label: 'tp' | 'fp';
  note?: string;
}

interface Run {
  catalog: string;
  findings: Finding[];
  failure: string | null;
  ms: number;
}

function lintCatalog(entry: ManifestEntry): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [SETTLE, 'lint', '--json', path.join(ROOT, entry.file)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), TIME_LIMIT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ms = Date.now() - started;
      if (signal !== null) return resolve({ catalog: entry.catalog, findings: [], failure: `hung: killed after ${TIME_LIMIT_MS} ms`, ms });
      if (code !== 0 && code !== 1) return resolve({ catalog: entry.catalog, findings: [], failure: `exit ${code}: ${stderr.trim()}`, ms });
      try {
        resolve({ catalog: entry.catalog, findings: JSON.parse(stdout) as Finding[], failure: null, ms });
      } catch (err) {
        resolve({ catalog: entry.catalog, findings: [], failure: `output is not JSON (${(err as Error).message})`, ms });
      }
    });
  });
}

const key = (catalog: string, rule: string, pointer: string) => `${catalog}\u0000${rule}\u0000${pointer}`;

function ratio(n: number, d: number): string {
  return d === 0 ? '—' : (n / d).toFixed(3);
}

async function main(): Promise<number> {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'manifest.json'), 'utf8')) as { catalogs: ManifestEntry[] };
  const labels = JSON.parse(fs.readFileSync(path.join(ROOT, 'labels.json'), 'utf8')) as Label[];
  const byKey = new Map(labels.map((l) => [key(l.catalog, l.rule, l.pointer), l]));

  // Two at a time: the machine has two cores.
  const runs: Run[] = [];
  const queue = [...manifest.catalogs];
  await Promise.all(
    [0, 1].map(async () => {
      for (let e = queue.shift(); e !== undefined; e = queue.shift()) runs.push(await lintCatalog(e));
    }),
  );
  runs.sort(
    (a, b) => manifest.catalogs.findIndex((c) => c.catalog === a.catalog) - manifest.catalogs.findIndex((c) => c.catalog === b.catalog),
  );

  const rules = RULE_IDS.filter((r) => runs.some((run) => run.findings.some((f) => f.rule === r)) || labels.some((l) => l.rule === r));
  console.log('findings per rule per catalog\n');
  const width = Math.max(...runs.map((r) => r.catalog.length), 7);
  console.log(`${'catalog'.padEnd(width)}  ${rules.map((r) => r.slice(0, 10).padStart(10)).join(' ')}   total   ms`);
  for (const run of runs) {
    const counts = rules.map((r) => String(run.findings.filter((f) => f.rule === r).length).padStart(10));
    console.log(
      `${run.catalog.padEnd(width)}  ${counts.join(' ')}  ${String(run.findings.length).padStart(6)}  ${run.ms}${run.failure ? `  FAILED: ${run.failure}` : ''}`,
    );
  }
  console.log(`(columns: ${rules.join(', ')})\n`);

  const produced = new Set<string>();
  const unlabelled: string[] = [];
  const score = new Map<string, { tp: number; fp: number; fn: number }>(rules.map((r) => [r, { tp: 0, fp: 0, fn: 0 }]));
  for (const run of runs) {
    for (const f of run.findings) {
      const k = key(run.catalog, f.rule, f.pointer);
      produced.add(k);
      const label = byKey.get(k);
      if (!label) {
        unlabelled.push(`${run.catalog} ${f.tool} ${f.rule} ${f.pointer}`);
        continue;
      }
      score.get(f.rule)![label.label === 'tp' ? 'tp' : 'fp']++;
    }
  }
  const missed: Label[] = [];
  for (const l of labels) {
    if (l.label !== 'tp' || produced.has(key(l.catalog, l.rule, l.pointer))) continue;
    if (runs.some((r) => r.catalog === l.catalog && r.failure === null)) {
      score.get(l.rule)!.fn++;
      missed.push(l);
    }
  }

  console.log('precision and recall per rule, against bench/lint-corpus/labels.json\n');
  console.log(
    `${'rule'.padEnd(22)} ${'TP'.padStart(5)} ${'FP'.padStart(5)} ${'FN'.padStart(5)} ${'precision'.padStart(10)} ${'recall'.padStart(8)}`,
  );
  const below: string[] = [];
  for (const r of rules) {
    const s = score.get(r)!;
    const precision = ratio(s.tp, s.tp + s.fp);
    if (s.tp + s.fp > 0 && s.tp / (s.tp + s.fp) < PRECISION_TARGET) below.push(r);
    console.log(
      `${r.padEnd(22)} ${String(s.tp).padStart(5)} ${String(s.fp).padStart(5)} ${String(s.fn).padStart(5)} ${precision.padStart(10)} ${ratio(s.tp, s.tp + s.fn).padStart(8)}`,
    );
  }
  const all = [...score.values()].reduce((a, s) => ({ tp: a.tp + s.tp, fp: a.fp + s.fp, fn: a.fn + s.fn }), { tp: 0, fp: 0, fn: 0 });
  console.log(
    `${'all rules'.padEnd(22)} ${String(all.tp).padStart(5)} ${String(all.fp).padStart(5)} ${String(all.fn).padStart(5)} ${ratio(all.tp, all.tp + all.fp).padStart(10)} ${ratio(all.tp, all.tp + all.fn).padStart(8)}`,
  );
  const fps = labels.filter((l) => l.label === 'fp' && produced.has(key(l.catalog, l.rule, l.pointer)));
  for (const l of fps) console.log(`  false positive: ${l.catalog} ${l.tool} ${l.rule} ${l.pointer} — ${l.note ?? ''}`);
  for (const l of missed) console.log(`  missed: ${l.catalog} ${l.tool} ${l.rule} ${l.pointer} — ${l.note ?? ''}`);
  console.log(
    `\n${runs.length} catalogs, ${runs.reduce((n, r) => n + r.findings.length, 0)} findings; precision target ${PRECISION_TARGET}: ` +
      (below.length === 0 ? 'met by every rule' : `not met by ${below.join(', ')}`),
  );

  const failed = runs.filter((r) => r.failure !== null);
  if (failed.length > 0) {
    for (const r of failed) console.error(`lint-corpus: ${r.catalog}: ${r.failure}`);
    return 1;
  }
  if (unlabelled.length > 0) {
    console.error(`lint-corpus: ${unlabelled.length} findings have no label in labels.json:`);
    for (const u of unlabelled) console.error(`  ${u}`);
    return 2;
  }
  return 0;
}

process.exitCode = await main();
