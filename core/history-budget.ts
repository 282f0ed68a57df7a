/**
 * What a trajectory may put into Temporal history and payloads (docs/design.md#history-budget).
 *
 * Temporal refuses any single payload over 2 MB (the run is then failed or terminated) and warns
 * from 512 KB. A model's reply, a turn's answer, the model request, the trajectory's result and
 * the state carried by continue-as-new are each one payload, so each is fitted to a budget here,
 * deterministically (this runs in workflow code). Cut text always says it was cut and where the
 * full result lives (the endpoint record: `settle show KEY`).
 */
import type { Observation } from './observation';
import { truncate } from './observation';

/** One observation as an activity may return it (also the most a tool message carries). */
export const MAX_OBSERVATION_CHARS = 64 * 1024;
/** What a call report keeps of its observation once its turn is answered (queries, results, continue-as-new). */
export const REPORT_OBSERVATION_CHARS = 4 * 1024;
// Budgets count characters; a character takes up to 3 bytes of UTF-8, so each budget × 3 stays
// under Temporal's 2 MB payload limit with room for the rest of the payload.
/** All observations of one runTurn answer together. */
export const MAX_TURN_RESULT_CHARS = 512 * 1024;
/** All tool messages one model turn adds to the conversation. */
export const MAX_TURN_TOOL_MESSAGES_CHARS = 128 * 1024;
/** The whole conversation sent to the model (one activity input, with the system prompt and the catalog). */
export const MAX_CONVERSATION_CHARS = 448 * 1024;
/** The reports in a trajectory's result or carried across continue-as-new. */
export const MAX_REPORTS_CHARS = 512 * 1024;
/** A model's text (content) as it enters history. */
export const MAX_MODEL_TEXT_CHARS = 64 * 1024;

/**
 * The local lane returns every local activity's result in the one request that completes its
 * workflow task, which Temporal caps at 4 MB (an activity's result comes back on its own). So a
 * read runs locally only while its workflow task has room: each local read reserves
 * LOCAL_READ_MAX_BYTES of the task's LOCAL_READ_BYTES_PER_TASK, and returns at most that much JSON
 * (a larger result is read again as an activity). The rest of a turn of many reads runs as
 * activities. Twice the per-task budget (a task the SDK heartbeats while reads are out) plus a
 * model request (MAX_CONVERSATION_CHARS) stays under the cap.
 */
export const LOCAL_READ_MAX_BYTES = 96 * 1024;
export const LOCAL_READ_BYTES_PER_TASK = 1024 * 1024;

export const ELIDED_NOTE =
  'cut by settle to keep history within Temporal’s limits; the full result is on the endpoint record (settle show KEY)';

/** The observation with output and error cut so that both together take at most `maxChars`. */
export function fitObservation(o: Observation, maxChars: number): Observation {
  const errorChars = o.error === null ? 0 : o.error.length;
  if (o.output.length + errorChars <= maxChars) return o;
  // Errors are usually short and say what went wrong: keep them first, up to half the room.
  const error = o.error === null ? null : truncate(o.error, Math.max(256, Math.floor(maxChars / 2)));
  const output = truncate(o.output, Math.max(0, maxChars - (error?.text.length ?? 0)));
  return { ...o, output: output.text, error: error?.text ?? null, truncated: true };
}

function observationChars(o: Observation | null): number {
  return o === null ? 0 : o.output.length + (o.error?.length ?? 0);
}

/**
 * Observations fitted to a shared budget: small ones stay whole, the largest are cut to an equal
 * share of what is left (the order of `items` is kept).
 */
export function fitObservations(items: (Observation | null)[], budget: number): (Observation | null)[] {
  const total = items.reduce((n, o) => n + observationChars(o), 0);
  if (total <= budget) return items;
  const sizes = items.map(observationChars);
  const byAscending = sizes.map((size, i) => ({ size, i })).sort((a, b) => a.size - b.size || a.i - b.i);
  const share = new Array<number>(items.length).fill(0);
  let left = budget;
  byAscending.forEach(({ size, i }, rank) => {
    const fair = Math.floor(left / (items.length - rank));
    share[i] = Math.min(size, fair);
    left -= share[i];
  });
  return items.map((o, i) => (o === null ? null : fitObservation(o, Math.max(share[i]!, 64))));
}

/** A report-like record: anything with an observation. */
interface WithObservation {
  observation: Observation | null;
}

/**
 * Copies of `reports` whose JSON fits `budget` characters: observations of the oldest reports are
 * cut first (newest are what a reader wants); if even bare reports do not fit, the oldest are
 * dropped and counted.
 */
export function fitReports<R extends WithObservation>(reports: R[], budget = MAX_REPORTS_CHARS): { reports: R[]; dropped: number } {
  // A report's JSON plus its comma in the array.
  const size = (r: R) => JSON.stringify(r).length + 1;
  let total = 1 + reports.reduce((n, r) => n + size(r), 0);
  if (total <= budget) return { reports, dropped: 0 };
  const out = reports.map((r) => ({ ...r }));
  for (const r of out) {
    if (total <= budget) break;
    if (!r.observation) continue;
    const before = size(r);
    r.observation = fitObservation(r.observation, 200);
    total -= before - size(r);
  }
  let dropped = 0;
  while (total > budget && dropped < out.length) total -= size(out[dropped++]!);
  return { reports: out.slice(dropped), dropped };
}

/** A chat message as the conversation holds it (see core/model/chat.ts). */
interface Message {
  role: string;
  content: string | null;
}

/**
 * The conversation fitted to `budget` characters of JSON: the oldest tool messages lose their
 * content first (the model keeps the task, its own calls and the newest observations).
 */
export function fitConversation<M extends Message>(messages: M[], budget = MAX_CONVERSATION_CHARS): M[] {
  let total = JSON.stringify(messages).length;
  if (total <= budget) return messages;
  const out = messages.map((m) => ({ ...m }));
  for (const m of out) {
    if (total <= budget) break;
    if (m.role !== 'tool' || m.content === null || m.content.length <= 200) continue;
    const note = `[${m.content.length} characters elided: ${ELIDED_NOTE}]`;
    total -= JSON.stringify(m.content).length - JSON.stringify(note).length;
    m.content = note;
  }
  return out;
}
