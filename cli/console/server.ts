/**
 * `settle console`'s web server: the inbox page and its two actions, on loopback only.
 *
 * Its authority is a cookie, and a cookie is scoped to a host name, never to a port: under
 * 127.0.0.1 or localhost every other local listener the browser visits would receive it. So the
 * console answers only under a host name made at each start, `<128 random bits>.settle.localhost`
 * (browsers resolve `*.localhost` to loopback without asking DNS), and its cookie is host-only on
 * that name (no Domain). Nobody who lacks the name can have the browser send the cookie, and no
 * refusal tells it. `__Host-` would need `Secure`, which a plain-http origin cannot set everywhere.
 *
 * Access: a random token, given once in the URL printed at start; the first visit trades it for
 * an HttpOnly, SameSite=Strict cookie, and every request without that cookie is refused. Writes
 * also need the per-start CSRF token every form carries, and an Origin (when the browser sends
 * one) naming this server. Who acts is the operator whose key the console signs with: every
 * action mints an operator credential from that key and goes through the CLI's own paths
 * (cli/resolve-call.ts), which land in the records' audit trail and the trajectories' histories.
 */
import crypto from 'node:crypto';
import { getRequestListener } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import type { EndpointStore } from '../../activities/store/endpoint-store';
import type { OperatorKeys, OperatorSigner } from '../../activities/operator/operator-keys';
import type { SettleClient } from '../../client/index';
import { approveCall, resolveCall, verdictOf } from '../resolve-call';
import { workflowUrl } from '../ui';
import { collectInbox } from './inbox';
import { listenOnLoopback } from './loopback-listener';
import { inboxPage, type AgeOrder } from './page';

export interface ConsoleOptions {
  client: SettleClient;
  store: EndpointStore;
  signer: OperatorSigner;
  /** The keys a direct write on a record is verified with (cli/operator-key.ts verifyingKeys). */
  keys: OperatorKeys;
  /** The Temporal UI's base URL (links to trajectories), or null. */
  uiUrl: string | null;
  namespace: string;
  /** 0: any free port. */
  port?: number;
}

export interface RunningConsole {
  /** The URL to open, with the access token: give it to the operator only, never to a log. */
  url: string;
  /** `http://<secret name>.settle.localhost:PORT`: as secret as the URL (it names where the cookie goes). */
  origin: string;
  port: number;
  close(): Promise<void>;
}

const COOKIE = 'settle_console';

export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const token = randomToken();
  const csrf = randomToken();
  const hostname = `${crypto.randomBytes(16).toString('hex')}.settle.localhost`;
  let origin = '';
  const app = consoleApp(options, { token, csrf, origin: () => origin });
  const handle = getRequestListener((request) => app.fetch(request));
  const listener = await listenOnLoopback((req, res) => void handle(req, res), options.port ?? 0);
  origin = `http://${hostname}:${listener.port}`;
  return { url: `${origin}/?token=${token}`, origin, port: listener.port, close: () => listener.close() };
}

function consoleApp(options: ConsoleOptions, secrets: { token: string; csrf: string; origin: () => string }): Hono {
  const app = new Hono();
  const authority = { signer: options.signer, keys: options.keys };

  app.use('*', async (c, next) => {
    const refusal = admit(c.req.raw, c.req.method, secrets);
    if (refusal) return secured(refusal);
    if (c.req.method === 'GET' && c.req.query('token') !== undefined) {
      // The token leaves the address bar (and history) at once, for a cookie scripts cannot read.
      return secured(
        new Response(null, {
          status: 303,
          // No Domain: host-only, sent to this start's secret name and no other.
          headers: { Location: '/', 'Set-Cookie': `${COOKIE}=${secrets.token}; HttpOnly; SameSite=Strict; Path=/` },
        }),
      );
    }
    await next();
    c.res = secured(c.res);
  });

  app.get('/', async (c) => {
    const order: AgeOrder = c.req.query('order') === 'newest' ? 'newest' : 'oldest';
    const notice = c.req.query('done')
      ? { ok: true, text: c.req.query('done')! }
      : c.req.query('error')
        ? { ok: false, text: c.req.query('error')! }
        : null;
    const nowMs = Date.now();
    const { items, missing } = await collectInbox(options.client, options.store, nowMs);
    return c.html(
      inboxPage({
        items,
        missing,
        nowMs,
        order,
        operator: options.signer.operator,
        csrf: secrets.csrf,
        trajectoryUrl: (id) => (options.uiUrl ? workflowUrl(options.uiUrl, options.namespace, id) : null),
        notice,
      }),
    );
  });

  app.post('/resolve', async (c) => {
    const form = await formOf(c, secrets.csrf);
    if (typeof form === 'string') return plain(403, form);
    const key = field(form, 'key', /^[0-9a-f]{64}$/, 'be a 64-digit hex key');
    const verdict = verdictOf(form.verdict ?? '');
    const generationText = field(form, 'generation', /^[1-9][0-9]{0,15}$/, 'be an integer ≥ 1');
    const reason = (form.reason ?? '').trim();
    const bad = !key.ok
      ? key.error
      : !verdict
        ? 'verdict: must be applied, not-applied or partial'
        : !generationText.ok
          ? generationText.error
          : !reason
            ? 'reason: must be a non-empty explanation'
            : null;
    if (bad) return plain(400, bad);
    const request = { key: key.value!, verdict: verdict!, reason, generation: Number(generationText.value) };
    try {
      const r = await resolveCall(options.client, options.store, request, authority);
      if (r.path === 'none') {
        return back(
          false,
          r.state === 'IN_DOUBT'
            ? `the record is IN_DOUBT at generation ${r.generation}, not the generation shown; look again`
            : `the record is ${r.state}, not IN_DOUBT; nothing to settle`,
        );
      }
      const how = r.path === 'update' ? 'via the settleCall update of the waiting trajectory' : `directly on the record (${r.why})`;
      return back(
        true,
        `${key.value!.slice(0, 16)}… in ${r.trajectoryId}: ${r.state} as ${verdict} (settled by operator:${r.operator}) ${how}`,
      );
    } catch (err) {
      return back(false, innermost(err));
    }
  });

  app.post('/approve', async (c) => {
    const form = await formOf(c, secrets.csrf);
    if (typeof form === 'string') return plain(403, form);
    const key = field(form, 'key', /^[0-9a-f]{64}$/, 'be a 64-digit hex key');
    const decision = form.decision === 'approve' || form.decision === 'deny' ? form.decision : null;
    const trajectoryId = form.trajectoryId ?? '';
    const reason = (form.reason ?? '').trim();
    const bad = !key.ok
      ? key.error
      : !decision
        ? 'decision: must be approve or deny'
        : !trajectoryId
          ? 'trajectoryId: must be given'
          : !reason
            ? 'reason: must be a non-empty explanation'
            : null;
    if (bad) return plain(400, bad);
    try {
      await approveCall(options.client, { trajectoryId, key: key.value!, decision: decision!, reason }, options.signer);
      return back(
        true,
        `${decision === 'approve' ? 'approved' : 'denied'} ${key.value!.slice(0, 16)}… in ${trajectoryId} by operator:${options.signer.operator}`,
      );
    } catch (err) {
      return back(false, innermost(err));
    }
  });

  // Temporal or Postgres unreachable: one line saying which, not a stack trace.
  app.onError((err) => secured(plain(502, `inbox: could not be read (${innermost(err).split('\n')[0]})`)));
  app.notFound((c) => c.text('not found: the console has / and its two actions\n', 404));
  return app;
}

/** The form's fields, or why it is refused: it must carry this start's CSRF token. */
async function formOf(c: Context, csrf: string): Promise<Record<string, string> | string> {
  const type = c.req.header('content-type') ?? '';
  if (!type.startsWith('application/x-www-form-urlencoded'))
    return 'Content-Type: must be application/x-www-form-urlencoded (a form of this console)';
  const parsed = await c.req.parseBody();
  // Text fields only: a file or repeated field reads as absent.
  const form = Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
  if (!same(form.csrf ?? '', csrf)) return 'csrf: missing or wrong (submit the form from the console page)';
  return form;
}

function field(
  form: Record<string, string>,
  name: string,
  pattern: RegExp,
  rule: string,
): { ok: true; value: string } | { ok: false; error: string; value?: undefined } {
  const value = form[name] ?? '';
  return pattern.test(value) ? { ok: true, value } : { ok: false, error: `${name}: must ${rule}` };
}

/** Back to the inbox with one line saying what happened (POST-redirect-GET: a reload does not act twice). */
function back(ok: boolean, line: string): Response {
  return new Response(null, {
    status: 303,
    headers: { Location: `/?${ok ? 'done' : 'error'}=${encodeURIComponent(line.split('\n')[0]!)}` },
  });
}

/** What the trajectory or the worker refused, as one line (below "activity failed" and "update failed"). */
function innermost(err: unknown): string {
  let reason = (err as Error).message;
  for (let e = (err as { cause?: unknown }).cause; e instanceof Error; e = (e as { cause?: unknown }).cause) reason = e.message;
  return reason;
}

/** Why a request is refused before any route sees it (null: admitted). */
function admit(request: Request, method: string, secrets: { token: string; origin: () => string }): Response | null {
  const origin = secrets.origin();
  // 127.0.0.1, localhost, a rebound DNS name: refused, without naming the one answered (the name is the secret).
  if (request.headers.get('host')?.toLowerCase() !== new URL(origin).host) {
    return plain(403, 'Host: is not this console’s (open the URL settle console printed at start)');
  }
  const given = new URL(request.url).searchParams.get('token');
  if (method === 'GET' && given !== null) {
    return same(given, secrets.token)
      ? null
      : plain(403, 'token: is not this console’s access token (use the URL settle console printed at start)');
  }
  if (!same(cookieOf(request.headers.get('cookie') ?? ''), secrets.token)) {
    return plain(403, 'access token: missing or wrong (open the URL settle console printed at start)');
  }
  const sentOrigin = request.headers.get('origin');
  if (method === 'POST' && sentOrigin !== null && sentOrigin !== origin) return plain(403, `Origin: must be ${origin} (got ${sentOrigin})`);
  return null;
}

function cookieOf(header: string): string {
  for (const part of header.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === COOKIE) return value.join('=');
  }
  return '';
}

/** One line of plain text: every refusal. */
function plain(status: number, line: string): Response {
  return new Response(`${line}\n`, { status, headers: { 'Content-Type': 'text/plain; charset=utf-8' } });
}

/** No caching, no framing, no scripts, forms to this origin only, no referrer to other sites. */
function secured(response: Response): Response {
  const h = response.headers;
  h.set('Cache-Control', 'no-store');
  h.set('X-Frame-Options', 'DENY');
  h.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
  // same-origin, not no-referrer: with no-referrer a browser posts forms with `Origin: null`.
  h.set('Referrer-Policy', 'same-origin');
  h.set('X-Content-Type-Options', 'nosniff');
  return response;
}

function randomToken(): string {
  return crypto.randomBytes(32).toString('base64url');
}

function same(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}
