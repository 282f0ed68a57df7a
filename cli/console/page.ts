/**
 * The console's one page, rendered on the server: the inbox as a table, sortable by age, with a
 * form per action. Every value goes through hono's `html` tag, which escapes it; every form
 * carries the CSRF token.
 */
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { InboxItem } from './inbox';
import { SWEEP_DEFAULTS } from '../../activities/settled/lease-sweeper';

export type AgeOrder = 'oldest' | 'newest';

export interface PageInput {
  items: InboxItem[];
  /** What could not be read (Temporal or PostgreSQL unreachable): one banner line each. */
  missing: string[];
  nowMs: number;
  order: AgeOrder;
  operator: string;
  csrf: string;
  /** The Temporal UI page of a trajectory, or null without a UI. */
  trajectoryUrl: (trajectoryId: string) => string | null;
  notice: { ok: boolean; text: string } | null;
}

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

const KIND_LABEL: Record<InboxItem['kind'], string> = {
  in_doubt: 'IN_DOUBT',
  lapsed_lease: 'IN_FLIGHT, lease lapsed',
  approval: 'waiting for approval',
};

export function inboxPage(p: PageInput): Html {
  const sorted = [...p.items].sort((a, b) => (p.order === 'oldest' ? a.sinceMs - b.sinceMs : b.sinceMs - a.sinceMs));
  const flip: AgeOrder = p.order === 'oldest' ? 'newest' : 'oldest';
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>settle console · ${sorted.length} need a person</title>
        <style>
          body {
            font:
              14px system-ui,
              sans-serif;
            margin: 1.5em;
            color: #222;
          }
          table {
            border-collapse: collapse;
            width: 100%;
          }
          th,
          td {
            border-bottom: 1px solid #ddd;
            padding: 0.4em;
            text-align: left;
            vertical-align: top;
          }
          th {
            background: #f4f4f4;
          }
          code {
            font-size: 12px;
            word-break: break-all;
            white-space: pre-wrap;
          }
          .saw {
            max-width: 28em;
            white-space: pre-wrap;
          }
          .notice {
            padding: 0.6em;
            margin: 1em 0;
            border: 1px solid;
          }
          .ok {
            border-color: #2a2;
            background: #efe;
          }
          .err {
            border-color: #c22;
            background: #fee;
          }
          form {
            margin: 0.2em 0;
          }
          input[type='text'] {
            width: 14em;
          }
        </style>
      </head>
      <body>
        <h1>Calls that need a person</h1>
        <p>
          Signed in as operator <strong id="operator">${p.operator}</strong> (your operator key signs every action). ${sorted.length}
          call(s). <a href="/">Refresh</a>
        </p>
        ${p.missing.map((line) => html`<p class="notice err missing">${line}</p>`)}
        ${p.notice ? html`<p class="notice ${p.notice.ok ? 'ok' : 'err'}" id="notice">${p.notice.text}</p>` : ''}
        <table id="inbox">
          <thead>
            <tr>
              <th><a id="sort-age" href="/?order=${flip}">age ${p.order === 'oldest' ? '▼ oldest first' : '▲ newest first'}</a></th>
              <th>state</th>
              <th>tool</th>
              <th>target</th>
              <th>trajectory</th>
              <th>call</th>
              <th>generation</th>
              <th>probe rounds</th>
              <th>what was seen</th>
              <th>action</th>
            </tr>
          </thead>
          <tbody>
            ${sorted.map((item) => row(item, p))}
          </tbody>
        </table>
        ${sorted.length ? '' : html`<p id="empty">Nothing needs a person.</p>`}
      </body>
    </html>`;
}

function row(item: InboxItem, p: PageInput): Html {
  const link = p.trajectoryUrl(item.trajectoryId);
  return html`<tr data-key="${item.key}" data-kind="${item.kind}">
    <td class="age" data-since="${new Date(item.sinceMs).toISOString()}">${age(p.nowMs - item.sinceMs)}</td>
    <td class="state">${KIND_LABEL[item.kind]}${item.trajectoryStatus ? html`<br /><small>${item.trajectoryStatus}</small>` : ''}</td>
    <td class="tool">${item.tool ?? '-'}</td>
    <td class="target">
      ${item.unreadable ? html`<small class="unreadable">${item.unreadable}</small>` : html`<code>${item.target || '-'}</code>`}${
        item.targetShortened
          ? html`<br /><small class="shortened"
                >shortened: this worker does not report the whole arguments; read them in the trajectory’s history before approving</small
              >`
          : ''
      }
    </td>
    <td class="trajectory">
      ${link ? html`<a href="${link}" target="_blank" rel="noopener noreferrer">${item.trajectoryId}</a>` : item.trajectoryId}
    </td>
    <td class="call">${item.key ? html`turn ${item.turn} · ${item.callId}<br /><code>${item.key.slice(0, 16)}</code>` : '-'}</td>
    <td class="generation">${item.generation ?? '-'}</td>
    <td class="probes">${item.probes ?? '-'}</td>
    <td class="saw">${item.saw ?? '-'}</td>
    <td class="action">
      ${item.unreadable ? '-' : item.kind === 'approval' ? approveForm(item, p.csrf) : resolveForm(item, p.nowMs, p.csrf)}
    </td>
  </tr>`;
}

function approveForm(item: InboxItem, csrf: string): Html {
  return html`<form method="post" action="/approve">
    <input type="hidden" name="csrf" value="${csrf}" />
    <input type="hidden" name="trajectoryId" value="${item.trajectoryId}" />
    <input type="hidden" name="key" value="${item.key}" />
    <input type="text" name="reason" placeholder="reason (recorded)" required />
    <button name="decision" value="approve">approve</button>
    <button name="decision" value="deny">deny</button>
  </form>`;
}

function resolveForm(item: InboxItem, nowMs: number, csrf: string): Html {
  // A lapsed lease is not settled yet: a running worker's sweeper turns it IN_DOUBT within seconds; then it can be resolved.
  if (item.kind === 'lapsed_lease') {
    return nowMs - item.sinceMs > UNSWEPT_AFTER_MS
      ? html`<small class="unswept"
          >no lease sweeper has taken it in ${age(nowMs - item.sinceMs)}: no worker runs. Start one (npm run worker, or settle dev); it then
          turns IN_DOUBT and can be settled</small
        >`
      : html`<small>becomes IN_DOUBT when a worker's lease sweeper sees it (within seconds); refresh</small>`;
  }
  return html`<form method="post" action="/resolve">
    <input type="hidden" name="csrf" value="${csrf}" />
    <input type="hidden" name="key" value="${item.key}" />
    <input type="hidden" name="generation" value="${item.generation ?? ''}" />
    <input type="text" name="reason" placeholder="what you checked (recorded)" required />
    <button name="verdict" value="applied">applied</button>
    <button name="verdict" value="not-applied">not applied</button>
    <button name="verdict" value="partial">partial</button>
  </form>`;
}

/** Past this, a lapsed lease still IN_FLIGHT means no sweeper runs (each sweeps every 2 s, leases lapsed 2 s). */
const UNSWEPT_AFTER_MS = 5 * (SWEEP_DEFAULTS.intervalMs + SWEEP_DEFAULTS.graceMs);

/** A short age: 42s, 7m 3s, 2h 5m, 3d 4h. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}
