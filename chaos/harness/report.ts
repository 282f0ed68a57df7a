/** The chaos table: as text for the terminal, as Markdown for results.md and the README. */
import type { Stats } from './metrics';
import type { ScenarioResult } from './scenario-types';
import { sigkillRecoveryByLane } from './lanes';

const HEADERS = [
  'scenario',
  'lane',
  'trajectories',
  'calls',
  'effects',
  'duplicates',
  'lost',
  'left in doubt',
  'wrong host (effects/claims)',
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
    r.hosts?.effectsElsewhere && `${r.hosts.effectsElsewhere} effect(s) on a host without the workspace`,
    r.hosts?.claimsElsewhere && `${r.hosts.claimsElsewhere} claim(s) on a host without the workspace`,
    r.failedTrajectories && `${r.failedTrajectories} failed trajectories`,
    r.failedTurns && `${r.failedTurns} failed turns`,
    r.failedCalls && `${r.failedCalls} calls answered otherwise (denied, …)`,
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

function caught(r: ScenarioResult): string {
  const n = r.recovery.all.n + r.recovery.unsettled;
  return `Calls caught in flight: ${n}${r.recovery.unsettled ? ` (${r.recovery.unsettled} never settled)` : ''}. `;
}

function renewals(r: ScenarioResult): string {
  if (r.renewalsPerRunningCallSecond === null || !r.renewals) return `n/a${r.renewalsNote ? ` (${r.renewalsNote})` : ''}`;
  return `${r.renewalsPerRunningCallSecond.toFixed(2)} (${r.renewals.statements} renewals over ${r.renewals.runningCallSeconds} call-seconds)`;
}

/** Where the settled calls' attempts ran (from the histories), and what stayed out of the run's lane. */
function lanes(r: ScenarioResult): string {
  const attempts = r.laneAttempts ? `Settled-call attempts: ${r.laneAttempts.local} local, ${r.laneAttempts.activity} activity. ` : '';
  return `${attempts}${r.laneNote ? `${r.laneNote}. ` : ''}`;
}

/** Recovery after a worker SIGKILL, by the lane of the call it caught, over every run of the table. */
export function laneSummary(results: ScenarioResult[]): string {
  const by = sigkillRecoveryByLane(results);
  return `Recovery p50/max after a worker SIGKILL (calls settle settled itself), by the caught call's lane: local ${recovery(by.local)}, activity ${recovery(by.activity)}.`;
}

function row(r: ScenarioResult): string[] {
  return [
    r.scenario,
    r.lane ?? 'default',
    String(r.trajectories),
    String(r.calls),
    String(r.effects),
    String(r.duplicates),
    String(r.lost),
    String(r.leftInDoubt),
    r.hosts ? `${r.hosts.effectsElsewhere}/${r.hosts.claimsElsewhere}` : '–',
    operator(r),
    recovery(r.recovery.probeable),
    recovery(r.recovery.all),
    faults(r),
    String(r.failedTrajectories + r.failedTurns + (r.failedCalls ?? 0) + r.unfinished),
  ];
}

export function textTable(results: ScenarioResult[]): string {
  const rows = [HEADERS, ...results.map(row)];
  const widths = HEADERS.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return [...rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')), '', laneSummary(results)].join('\n');
}

export function markdownTable(
  results: ScenarioResult[],
  meta: {
    generatedAt: string;
    mode: string;
    seed: number;
    host: string;
    load?: string;
    commit?: string;
    only?: string;
    lane?: string;
    /** What the scenarios ran on (Temporal, TLS), when the set says it. */
    topology?: string;
    plain?: boolean;
  },
): string {
  const set = meta.mode === 'quick' || meta.mode === 'production' ? ` --${meta.mode}${meta.plain ? ' --plain' : ''}` : '';
  const command = ['npm run chaos', set || meta.only || meta.lane ? ' --' : '', set]
    .concat(meta.only ? [` --only ${meta.only}`] : [], meta.lane ? [` --lane ${meta.lane}`] : [])
    .join('');
  const lines = [
    `# Chaos results (${meta.mode}, seed ${meta.seed})`,
    '',
    `Generated ${meta.generatedAt} by \`${command}\` on ${meta.host}` +
      `${meta.load ? `, load average ${meta.load}` : ''}${meta.commit ? `, commit ${meta.commit}` : ''}.`,
    ...(meta.topology ? [`Topology: ${meta.topology}.`] : []),
    'Effects are counted from the workspaces’ files, never from settle’s records. A call is *caught* by a',
    'fault when its record was IN_FLIGHT at the fault’s instant (held by the victim, for a worker fault);',
    'its *recovery* is the time from the fault to the moment that same generation of the record was',
    'settled again — COMPLETED or NOT_EXECUTED, i.e. settle knows again whether the effect happened — not',
    'until the call ran again. *Probeable* = settled by settle itself: its executor, or a probe reading the',
    'file or the shell run markers; *all* adds the calls an operator settled (shell commands killed while',
    'running: facts truly unknown). *Lease renewals per running call-second*: executions of the renewal',
    'statement, counted exactly by pg_stat_statements, divided by the seconds calls were IN_FLIGHT under a',
    'live executor (claim to settlement, or to the death or pause of its holder); by design at most 1.',
    '',
    'Each scenario runs in both lanes: *activity*, its short tools moved to the activity lane',
    '(SETTLE_LANES), and *local*, the defaults plus the tools short enough to move there; a row names',
    'what stayed in the activity lane. Each recovery counts in the lane of the call it caught.',
    '',
    'A scenario on several *hosts* spreads its workers and its workspaces over mount namespaces that each',
    'bind a disk of their own at the same paths (chaos/harness/hosts.ts); a stale copy of every workspace',
    'is on the other hosts’ disks. Effects are counted on every disk: *effects*, *duplicates* and *lost*',
    'on the disk of the host that holds the workspace; *wrong host* counts apart the effects found on',
    'another host’s copy and the claims recorded by another host (each a defect). A *host-death* catches',
    'the calls its workers held; their recovery includes the seconds the host was down.',
    '',
    laneSummary(results),
    '',
    `| ${HEADERS.join(' | ')} |`,
    `|${HEADERS.map(() => '---').join('|')}|`,
    ...results.map((r) => `| ${row(r).join(' | ')} |`),
    '',
    ...results.map(
      (r) =>
        `- **${r.scenario}** (${r.lane ?? 'default'} lane): ${r.description}. ${r.hosts ? `${r.hosts.count} hosts. ` : ''}${lanes(r)}Faults: ${
          Object.entries(r.faults)
            .map(([k, n]) => `${n} × ${k}`)
            .join(', ') || 'none'
        }. ${caught(r)}Lease renewals per running call-second: ${renewals(r)}. ${taskFailures(r)}${verdict(r)}.`,
    ),
    '',
  ];
  return lines.join('\n');
}
