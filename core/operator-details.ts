/**
 * What the Temporal Web UI shows as a trajectory's current details (and the `waitingFor` query
 * answers) while it waits for a person. Pure text, no Temporal.
 *
 * The UI renders current details as Markdown: outside code, `--as` becomes an en dash and quotes
 * turn curly, so a pasted command fails. Every command therefore sits in a fenced code block,
 * one complete command per line (no `a|b` alternatives: a shell would read a pipe), and every
 * key or path in a code span. The first line is short: what waits, since when; the next one the
 * tool and its target, the key and the deadline.
 */
import { printable } from './printable';

/**
 * How a command shown to an operator calls settle: `npx settle` runs the `settle` bin of the
 * project where settle is installed (a consumer's, or this repository after `npm ci`), with no
 * global install or PATH change — the way every doc calls it. A bare `settle` pasted into a
 * shell without it on PATH answers "command not found".
 */
export const SETTLE_COMMAND = 'npx settle';

export interface WaitDetails {
  /** What waits, e.g. "waiting for an operator". */
  headline: string;
  tool: string;
  /** The call's target (path, command, pattern), already shortened. */
  target: string;
  key: string;
  /** Milliseconds since the epoch (workflow time) when the wait began. */
  sinceMs: number;
  /** When the wait ends by itself, and what happens then; null: it waits until someone acts. */
  deadline: { atMs: number; then: string } | null;
  /** One or two sentences: why it waits and what to check. */
  explanation: string;
  /** Complete commands, each copy-pasteable as is. */
  commands: string[];
  /** For a call waiting for approval: its whole arguments, shown after the commands (escaped, never cut). */
  args?: Record<string, unknown>;
}

export function waitDetails(d: WaitDetails): string {
  const deadline = d.deadline ? `deadline ${utc(d.deadline.atMs)} (then ${d.deadline.then})` : 'no deadline';
  const target = d.target ? ` ${codeSpan(d.target)}` : '';
  // A short first line (what waits, since when), then what and until when, then the commands
  // before the explanation: an SRE reads the top of the details pane first.
  return [
    `**${d.headline}** · since ${utc(d.sinceMs)}`,
    '',
    `${codeSpan(d.tool)}${target} · key ${codeSpan(d.key.slice(0, 16))} · ${deadline}`,
    '',
    '```sh',
    ...d.commands,
    '```',
    '',
    // What an approval lets run, whole: the summary above is cut, the arguments never are.
    ...(d.args ? ['Arguments, in full:', '', '```json', printable(JSON.stringify(d.args)).replace(/`/g, '\\x60'), '```', ''] : []),
    d.explanation,
  ].join('\n');
}

/** A value for a shell command line, quoted only when it needs to be. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A Markdown code span that survives backticks inside the text. */
export function codeSpan(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ');
  const longest = Math.max(0, ...(oneLine.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const pad = oneLine.startsWith('`') || oneLine.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${oneLine}${pad}${fence}`;
}

function utc(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/**
 * The details as the Web UI's current-details pane should get them. The pane sizes itself to the
 * rendered body without its margins and cuts the rest, about the last line of a text taller than
 * the pane's minimum: a closing rule takes that place, so every line of the details shows.
 */
export function forDetailsPane(details: string): string {
  return details.includes('\n') ? `${details}\n\n---` : details;
}

/** What waits and since when, read back from a summary line waitDetails wrote (null: not one). */
export function parseWaitSummary(details: string): { headline: string; sinceMs: number } | null {
  const first = details.split('\n')[0] ?? '';
  // `**headline** · since …`; a running workflow from before the short first line: `**headline** · tool … · since … UTC · deadline`.
  const match = /^\*\*(.+?)\*\* · (?:.* · )?since (\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) UTC(?: · |$)/.exec(first);
  if (!match) return null;
  const sinceMs = Date.parse(`${match[2]}T${match[3]}Z`);
  return Number.isFinite(sinceMs) ? { headline: match[1]!, sinceMs } : null;
}
