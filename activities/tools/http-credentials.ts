/**
 * Credentials `http_request` adds for the worker's operator (docs/http-request.md): never a tool
 * argument, so a model can neither read nor redirect them.
 *
 *   SETTLE_HTTP_AUTHORIZATION  comma-separated `host[:port]=VARIABLE` entries: a request to exactly
 *                              that host and port (443 without one) carries an `Authorization`
 *                              header whose value is the environment variable VARIABLE's (e.g.
 *                              `Bearer sk_live_…`). Subdomains are not included.
 */
import { parseHostSpec } from '../../core/capability/rules';
import { InputError } from '../../core/errors';

export const AUTHORIZATION_VARIABLE = 'SETTLE_HTTP_AUTHORIZATION';

/** The Authorization header for `host:port`, or null when the operator configured none. Throws InputError for a bad entry. */
export function authorizationFor(host: string, port: number, env: NodeJS.ProcessEnv = process.env): string | null {
  const raw = env[AUTHORIZATION_VARIABLE] ?? '';
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const m = /^([^=\s]+)=([A-Z_][A-Z0-9_]*)$/.exec(entry);
    if (!m) throw new InputError(`${AUTHORIZATION_VARIABLE}[${i}]`, `be host[:port]=VARIABLE (got ${JSON.stringify(entry)})`);
    const target = parseHostSpec(m[1]!, `${AUTHORIZATION_VARIABLE}[${i}]`);
    if (target.host !== host || (target.port ?? 443) !== port) continue;
    const value = env[m[2]!];
    if (!value || !/^[\x20-\x7e]+$/.test(value)) {
      throw new InputError(`${AUTHORIZATION_VARIABLE}[${i}]`, `name a set variable of printable ASCII (${m[2]} is empty or unset)`);
    }
    return value;
  }
  return null;
}
