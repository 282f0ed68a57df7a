/**
 * Credentials `http_request` adds for the worker's operator (docs/http-request.md#credentials):
 * never a tool argument, so a model can neither read nor redirect them.
 *
 *   SETTLE_HTTP_AUTHORIZATION  comma-separated entries, each naming exactly one host and port
 *                              (subdomains are not included) and an environment variable whose
 *                              value is sent as the `Authorization` header (e.g. `Bearer sk_live_…`):
 *                                `host[:port]=VARIABLE`         over https only (port 443 without one)
 *                                `http://host[:port]=VARIABLE`  over plain http (port 80 without one)
 *
 * Plain http carries the credential in clear text to whoever is on the path, so it is never
 * implied: a request over http to a host and port whose entry is https-only is refused, naming the
 * entry and the spelling that would allow it.
 */
import { parseHostSpec } from '../../core/capability/rules';
import { InputError } from '../../core/errors';

export const AUTHORIZATION_VARIABLE = 'SETTLE_HTTP_AUTHORIZATION';

interface Entry {
  field: string;
  scheme: 'http' | 'https';
  host: string;
  port: number;
  variable: string;
}

/**
 * The Authorization header for a request over `scheme` to `host:port`, or null when the operator
 * configured none. Throws InputError for a bad entry, an unset variable, or credentials the
 * operator allowed over https only when the request is plain http.
 */
export function authorizationFor(
  scheme: 'http' | 'https',
  host: string,
  port: number,
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  const matching = entries(env).filter((e) => e.host === host && e.port === port);
  const entry = matching.find((e) => e.scheme === scheme);
  if (!entry) {
    const httpsOnly = scheme === 'http' ? matching[0] : undefined;
    if (httpsOnly) {
      throw new InputError(
        httpsOnly.field,
        `be spelled http://${host}:${port}=${httpsOnly.variable} to send ${httpsOnly.variable} over plain http (it is sent over https only)`,
      );
    }
    return null;
  }
  const value = env[entry.variable];
  if (!value || !/^[\x20-\x7e]+$/.test(value)) {
    throw new InputError(entry.field, `name a set variable of printable ASCII (${entry.variable} is empty or unset)`);
  }
  return value;
}

function entries(env: NodeJS.ProcessEnv): Entry[] {
  return (env[AUTHORIZATION_VARIABLE] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((text, i) => {
      const field = `${AUTHORIZATION_VARIABLE}[${i}]`;
      const m = /^(http:\/\/)?([^=\s/]+)=([A-Z_][A-Z0-9_]*)$/.exec(text);
      if (!m) throw new InputError(field, `be host[:port]=VARIABLE or http://host[:port]=VARIABLE (got ${JSON.stringify(text)})`);
      const scheme = m[1] ? 'http' : 'https';
      const target = parseHostSpec(m[2]!, field);
      return { field, scheme, host: target.host, port: target.port ?? (scheme === 'http' ? 80 : 443), variable: m[3]! };
    });
}
