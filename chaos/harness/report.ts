/** The chaos table: as text for the terminal, as Markdown for results.md and the README. */
import type { ScenarioResult, Stats } from './scenario';

const HEADERS = [
  'scenario',
  'trajectories',
  'calls',
  'effects',
  'duplicates',
  'lost',
  'left in doubt',
  'operator',
  'recovery p50/max (probeable)',
  'recovery p50/max (all)',
  'faults',
  'failed',
];

/** ok, or what is wrong: the properties the suite exists to prove. */
export function verdict(r: ScenarioResult): string {
  const wrong = [
    r.duplicates && `${r.duplicates} duplicate(s)`,
    r.lost && `${r.lost} lost`,
    r.misreported && `${r.misreported} misreported`,
    r.leftInDoubt && `${r.leftInDoubt} left in doubt`,
    r.failedTrajectories && `${r.failedTrajectories} failed trajectories`,
    r.failedTurns && `${r.failedTurns} failed turns`,
    r.unfinished && `${r.unfinished} unfinished`,
    Object.keys(r.workflowTaskFailures).some((m) => /nondetermin/i.test(m)) && 'nondeterminism',
  ].filter(Boolean);
  return wrong.length ? wrong.join(', ') : 'ok';
}

function seconds(ms: number | null): string {
  return ms === null ? '–' : `${(ms / 1000).toFixed(1)} s`;
}

function recovery(s: Stats): string {
  return s.n === 0 ? '–' : `${seconds(s.p50Ms)} / ${seconds(s.maxMs)} (n=${s.n})`;
}

function operator(r: ScenarioResult): string {
  const entries = Object.entries(r.operator);
  return entries.length ? entries.map(([tool, n]) => `${n} ${tool}`).join(', ') : '0';
}

function faults(r: ScenarioResult): string {
  return String(Object.values(r.faults).reduce((a, b) => a + b, 0));
}

function taskFailures(r: ScenarioResult): string {
  const entries = Object.entries(r.workflowTaskFailures);
  return entries.length ? `Workflow task failures (retried): ${entries.map(([m, n]) => `${n} × “${m}”`).join('; ')}. ` : '';
}

function row(r: ScenarioResult): string[] {
  return [
    r.scenario,
    String(r.trajectories),
    String(r.calls),
    String(r.effects),
    String(r.duplicates),
    String(r.lost),
    String(r.leftInDoubt),
    operator(r),
    recovery(r.recovery.probeable),
    recovery(r.recovery.all),
    faults(r),
    String(r.failedTrajectories + r.failedTurns + r.unfinished),
  ];
}

export function textTable(results: ScenarioResult[]): string {
  const rows = [HEADERS, ...results.map(row)];
  const widths = HEADERS.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')).join('\n');
}

export function markdownTable(
  results: ScenarioResult[],
  meta: { generatedAt: string; mode: string; seed: number; host: string; load?: string; commit?: string },
): string {
  const lines = [
    `# Chaos results (${meta.mode}, seed ${meta.seed})`,
    '',
    `Generated ${meta.generatedAt} by \`npm run chaos${meta.mode === 'quick' ? ' -- --quick' : ''}\` on ${meta.host}` +
      `${meta.load ? `, load average ${meta.load}` : ''}${meta.commit ? `, commit ${meta.commit}` : ''}.`,
    'Effects are counted from the workspaces’ files; recovery is the time from a fault to the',
    'moment a call it caught was settled again (probeable = settled by settle itself — its executor or a',
    'probe reading the file or the shell run markers — not by the operator).',
    '',
    `| ${HEADERS.join(' | ')} |`,
    `|${HEADERS.map(() => '---').join('|')}|`,
    ...results.map((r) => `| ${row(r).join(' | ')} |`),
    '',
    ...results.map(
      (r) =>
        `- **${r.scenario}**: ${r.description}. Faults: ${
          Object.entries(r.faults)
            .map(([k, n]) => `${n} × ${k}`)
            .join(', ') || 'none'
        }. Lease renewals per running call-second: ${r.renewalsPerRunningCallSecond === null ? 'n/a' : r.renewalsPerRunningCallSecond.toFixed(2)}. ${taskFailures(r)}${verdict(r)}.`,
    ),
    '',
  ];
  return lines.join('\n');
}
