/**
 * What TLS a DATABASE_URL asks of `pg` (8.23, with pg-connection-string 2.14), read as pg reads it,
 * and the doctor's and worker start's one line about it. pg's meanings differ from libpq's:
 * without `uselibpqcompat=true`, `prefer`, `require` and `verify-ca` verify like `verify-full`
 * (CA and host name), and no mode falls back to plaintext when the server refuses TLS; with it,
 * `prefer` and `require` do not verify, `require` with `sslrootcert` and `verify-ca` check the CA only.
 */
import type { FindingLevel } from './record-store-requirements';

/** What of the server's certificate is checked: `off` is plaintext. */
export type DatabaseTlsVerification = 'off' | 'unverified' | 'ca-only' | 'full';

export interface DatabaseTls {
  /** As written (URL, else PGSSLMODE), or `ssl=true`; null when nothing asks for TLS. */
  mode: string | null;
  verification: DatabaseTlsVerification;
  /** Whose CAs a verified certificate must chain to. */
  trust: 'sslrootcert' | 'system CAs';
  clientCertificate: boolean;
  libpqCompat: boolean;
  /** The server's host name or address; '' for a Unix socket. */
  host: string;
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|::1|)$/;

export function readDatabaseTls(url: string, env: NodeJS.ProcessEnv = {}): DatabaseTls {
  const parsed = new URL(url);
  const q = parsed.searchParams;
  const sslmode = q.get('sslmode');
  const libpqCompat = q.get('uselibpqcompat') === 'true';
  const rootCert = q.has('sslrootcert');
  const base = {
    trust: rootCert ? ('sslrootcert' as const) : ('system CAs' as const),
    clientCertificate: q.has('sslcert') && q.has('sslkey'),
    libpqCompat,
    host: q.get('host') ?? parsed.hostname,
  };
  const asks = sslmode !== null || rootCert || q.has('sslcert') || q.has('sslkey');
  if (!asks) {
    const ssl = q.get('ssl');
    if (ssl === 'true' || ssl === '1') return { ...base, mode: 'ssl=true', verification: 'full' };
    if (ssl !== null) return { ...base, mode: null, verification: 'off' };
    // pg reads PGSSLMODE only when the URL says nothing of TLS.
    const fromEnv = env.PGSSLMODE;
    if (!fromEnv || fromEnv === 'disable') return { ...base, mode: null, verification: 'off' };
    return { ...base, mode: fromEnv, verification: fromEnv === 'no-verify' ? 'unverified' : 'full' };
  }
  const mode = sslmode ?? 'verify-full';
  if (mode === 'disable') return { ...base, mode, verification: 'off' };
  if (mode === 'no-verify') return { ...base, mode, verification: 'unverified' };
  if (!libpqCompat) return { ...base, mode, verification: 'full' };
  if (mode === 'prefer') return { ...base, mode, verification: 'unverified' };
  if (mode === 'require') return { ...base, mode, verification: rootCert ? 'ca-only' : 'unverified' };
  if (mode === 'verify-ca') return { ...base, mode, verification: 'ca-only' };
  return { ...base, mode, verification: 'full' };
}

/** One line: the mode, what is verified, and the fix when a non-loopback server could be impersonated or read. */
export function databaseTlsFinding(tls: DatabaseTls): { level: FindingLevel; line: string } {
  const local = LOOPBACK.test(tls.host);
  const where = tls.host || 'a Unix socket';
  const client = tls.clientCertificate ? ', client certificate sent' : '';
  const fix = 'set sslmode=verify-full (and sslrootcert=<CA file> for a private CA) in DATABASE_URL';
  switch (tls.verification) {
    case 'off':
      return local
        ? { level: 'ok', line: 'database tls: none (a loopback server)' }
        : { level: 'warn', line: `database tls: none to ${where}: ${fix}` };
    case 'full': {
      const alias = tls.mode !== 'verify-full' && tls.mode !== 'ssl=true' ? ` (pg verifies it as verify-full)` : '';
      return {
        level: 'ok',
        line: `database tls: ${tls.mode}${alias}, server certificate verified (CA from ${tls.trust}, host name ${where})${client}`,
      };
    }
    case 'ca-only':
      return local
        ? {
            level: 'ok',
            line: `database tls: ${tls.mode}, server certificate's CA verified, not its host name (a loopback server)${client}`,
          }
        : {
            level: 'warn',
            line: `database tls: ${tls.mode} to ${where} checks the server certificate's CA but not its host name: ${fix}`,
          };
    case 'unverified':
      return local
        ? { level: 'ok', line: `database tls: ${tls.mode}, server certificate not verified (a loopback server)${client}` }
        : {
            level: 'warn',
            line: `database tls: ${tls.mode} to ${where} encrypts but does not verify the server certificate (anyone on the path can pose as the server): ${fix}`,
          };
  }
}
