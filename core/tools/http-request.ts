/**
 * `http_request` arguments (docs/http-request.md): one state-changing HTTP request to a host the
 * capability grants, sent with settle's derived key as its `Idempotency-Key`. Pure: the URL is
 * taken apart by one grammar here, so the workflow's capability pre-check and the activity see
 * the same host and port.
 */
import { z } from 'zod';
import { lazy } from '../lazy';
import { canonicalHost } from '../capability/rules';
import { InputError } from '../errors';

export const HTTP_REQUEST = 'http_request';

/** State-changing methods only: a GET has no effect to settle (an A0 read is another tool's job). */
export const HTTP_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Request headers a call may set. Never credentials (Authorization, Cookie: the worker's operator
 * configures those per host), never what settle sets itself (Idempotency-Key, Content-Type, Host).
 */
export const HTTP_HEADER_NAMES = ['Accept-Language', 'If-Match', 'Prefer', 'X-Correlation-Id'] as const;

export const MAX_HTTP_BODY_CHARS = 65536;

/**
 * `scheme://host[:port][/path][?query]`: a lowercase DNS name or a dotted-quad IPv4 address, no
 * user info, no fragment, printable ASCII without `"`, `#`, `\` or spaces in the path.
 */
const URL_PATTERN = /^(https?):\/\/([a-z0-9.-]{1,253})(?::([1-9]\d{0,4}))?([/?][!$-[\]-~]*)?$/;

export interface HttpTarget {
  scheme: 'http' | 'https';
  host: string;
  /** Explicit, or the scheme's default (443, 80). */
  port: number;
  /** Path and query as sent (`/` when the URL has none). */
  path: string;
}

/** Takes a URL of the grammar apart; throws InputError naming `field` otherwise. */
export function httpTarget(url: string, field = 'url'): HttpTarget {
  const m = URL_PATTERN.exec(url);
  if (!m || (m[3] !== undefined && Number(m[3]) > 65535)) {
    throw new InputError(
      field,
      'be https://host[:port]/path (a lowercase host name or IPv4 address, no user info or fragment; ' +
        `http only for an address the worker's operator allows) (got ${JSON.stringify(url.slice(0, 100))})`,
    );
  }
  const scheme = m[1] as 'http' | 'https';
  const host = canonicalHost(m[2]!, field);
  const port = m[3] !== undefined ? Number(m[3]) : scheme === 'https' ? 443 : 80;
  const rest = m[4] ?? '/';
  return { scheme, host, port, path: rest.startsWith('?') ? `/${rest}` : rest };
}

const urlField = (description: string) =>
  z
    .string()
    .max(2048)
    .regex(URL_PATTERN, 'be https://host[:port]/path: a lowercase host name or IPv4 address, no user info, no fragment')
    .describe(description);

/** Built on first use (core/lazy.ts). */
export const httpRequestArgs = lazy(() =>
  z
    .object({
      method: z.enum(HTTP_METHODS).describe('HTTP method (state-changing only).'),
      url: urlField("https://host[:port]/path?query; host and port must be within one of the capability's host: objects."),
      body: z
        .string()
        .max(MAX_HTTP_BODY_CHARS)
        .refine(isJsonText, 'be JSON text (e.g. {"amount": 100})')
        .optional()
        .describe('Request body as JSON text, sent byte for byte as application/json; absent: no body.'),
      headers: z
        .array(
          z
            .object({
              name: z.enum(HTTP_HEADER_NAMES).describe('Header name.'),
              value: z
                .string()
                .min(1)
                .max(256)
                .regex(/^[\x20-\x7e]+$/, 'be printable ASCII')
                .describe('Header value, printable ASCII.'),
            })
            .strict()
            .describe('One request header.'),
        )
        .max(4)
        .default([])
        .describe('Extra request headers from a fixed list; credentials are added by the worker, never passed here.'),
      status_url: urlField(
        'Same origin as url: a GET answering 2xx once the request took effect, 404 while not. Settle reads it to decide a ' +
          'call in doubt instead of resending.',
      ).optional(),
    })
    .strict()
    .superRefine((args, ctx) => {
      if (args.status_url === undefined) return;
      try {
        const a = httpTarget(args.url);
        const s = httpTarget(args.status_url, 'status_url');
        if (a.scheme !== s.scheme || a.host !== s.host || a.port !== s.port) {
          ctx.addIssue({ code: 'custom', path: ['status_url'], message: 'be on the same scheme, host and port as url' });
        }
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        // The field's own rule reports it.
      }
    })
    .describe(
      "Sends one POST, PUT, PATCH or DELETE to a host the capability grants, with the call's idempotency key as " +
        'Idempotency-Key; returns status, selected headers and body. When the outcome is in doubt, settle resends the same ' +
        'request with the same key (the endpoint must deduplicate) or reads status_url.',
    ),
);

export type HttpRequestArgs = z.output<ReturnType<typeof httpRequestArgs>>;

function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
