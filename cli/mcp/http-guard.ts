/**
 * Who may talk to `settle mcp serve --http` (docs/mcp.md#streamable-http-who-may-connect). The
 * gateway runs tools in the operator's name, so a request is served only when it is addressed to
 * this gateway (Host: a DNS-rebinding page reaches 127.0.0.1 under its own name), comes from no
 * browser page or an allowed one (Origin, as the MCP spec requires of local servers), and carries
 * the bearer token (any other local user or process can reach the port). Checked in that order,
 * before a session exists, so a refused request learns nothing of the gateway.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { errorMessage } from '../../core/errors';
import { UsageError } from '../usage-error';

export interface HttpAccess {
  /** The bearer token every request must carry. */
  token: string;
  /** Origins a browser page may call from (exactly as browsers send them); none by default. */
  origins: ReadonlySet<string>;
}

export interface HttpRefusal {
  status: 401 | 403 | 421;
  /** One line for the client and the operator's log. */
  reason: string;
}

/** Below this a token could be guessed; the generated ones are 43 characters. */
const MIN_TOKEN_LENGTH = 32;
const TOKEN_PATTERN = /^[A-Za-z0-9._~+/=-]+$/; // RFC 6750 b64token

/**
 * The token: the one in `tokenFile` (owner-only, as every file holding a secret), else a new one
 * for this start (`generated`: the operator must be told it once).
 */
export function bearerToken(tokenFile: string | undefined): { token: string; generated: boolean } {
  if (tokenFile === undefined) return { token: randomBytes(32).toString('base64url'), generated: true };
  let text: string;
  let mode: number;
  try {
    text = fs.readFileSync(tokenFile, 'utf8');
    mode = fs.statSync(tokenFile).mode;
  } catch (err) {
    throw new UsageError(`--token-file: must name a readable file (${errorMessage(err)})`);
  }
  if ((mode & 0o077) !== 0) {
    throw new UsageError(`--token-file: must be readable by its owner only (it is mode ${(mode & 0o777).toString(8)}; chmod 600 it)`);
  }
  const token = text.trim();
  if (token.length < MIN_TOKEN_LENGTH || !TOKEN_PATTERN.test(token)) {
    throw new UsageError(
      `--token-file: must hold one token of at least ${MIN_TOKEN_LENGTH} characters from A-Z a-z 0-9 . _ ~ + / = - (e.g. openssl rand -base64 32)`,
    );
  }
  return { token, generated: false };
}

/** `--allow-origin` values: each a bare origin (scheme://host[:port]) as a browser sends it. */
export function allowedOrigins(values: readonly string[]): Set<string> {
  const origins = new Set<string>();
  for (const value of values) {
    let origin: string | null = null;
    try {
      origin = new URL(value).origin;
    } catch {
      // not a URL: refused below
    }
    if (origin === null || origin === 'null' || origin !== value) {
      throw new UsageError(
        `--allow-origin: must be an origin such as https://app.example:8443, with no path or trailing slash (got ${value})`,
      );
    }
    origins.add(origin);
  }
  return origins;
}

/** The Host values that name this gateway: the address it is bound to and localhost, with its port. */
export function gatewayHosts(port: number): Set<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
}

/** Why this request is refused, or null when it may be served. */
export function refusal(headers: IncomingHttpHeaders, access: HttpAccess, hosts: ReadonlySet<string>): HttpRefusal | null {
  const host = headers.host?.toLowerCase();
  if (host === undefined || !hosts.has(host)) {
    return { status: 421, reason: `Host ${JSON.stringify(headers.host ?? '')} is not this gateway's (${[...hosts].join(', ')})` };
  }
  const origin = headers.origin;
  if (origin !== undefined && !access.origins.has(origin)) {
    return { status: 403, reason: `Origin ${JSON.stringify(origin)} is not allowed (the operator allows origins with --allow-origin)` };
  }
  const match = /^Bearer +(\S+) *$/i.exec(headers.authorization ?? '');
  if (!match) return { status: 401, reason: 'Authorization: must be "Bearer <token>" (the token settle mcp serve printed or read)' };
  if (!tokensMatch(match[1]!, access.token)) return { status: 401, reason: "Authorization: the bearer token is not this gateway's" };
  return null;
}

/** Constant-time: both sides hashed to the same length first, so neither content nor length leaks through timing. */
function tokensMatch(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}
