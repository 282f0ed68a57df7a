/** core/database-tls.ts: DATABASE_URL's TLS as pg 8.23 reads it, and the one line doctor and worker start print. */
import { describe, expect, it } from 'vitest';
import { databaseTlsFinding, readDatabaseTls } from '../../core/database-tls';

const line = (url: string, env: NodeJS.ProcessEnv = {}) => databaseTlsFinding(readDatabaseTls(url, env));

describe('database tls', () => {
  it('verify-full with a private CA is verified; pg verifies require and verify-ca the same way', () => {
    expect(line('postgres://s@db.internal/settle?sslmode=verify-full&sslrootcert=/ca.pem')).toEqual({
      level: 'ok',
      line: 'database tls: verify-full, server certificate verified (CA from sslrootcert, host name db.internal)',
    });
    expect(line('postgres://s@db.internal/settle?sslmode=require').line).toBe(
      'database tls: require (pg verifies it as verify-full), server certificate verified (CA from system CAs, host name db.internal)',
    );
  });

  it('warns, with the fix, when a non-loopback server is not verified or not encrypted', () => {
    for (const url of [
      'postgres://s@db.internal/settle?sslmode=require&uselibpqcompat=true',
      'postgres://s@db.internal/settle?sslmode=no-verify',
      'postgres://s@db.internal/settle?sslmode=verify-ca&sslrootcert=/ca.pem&uselibpqcompat=true',
      'postgres://s@db.internal/settle',
      'postgres://s@db.internal/settle?sslmode=disable',
    ]) {
      const finding = line(url);
      expect(finding.level, url).toBe('warn');
      expect(finding.line, url).toMatch(/: set sslmode=verify-full \(and sslrootcert=<CA file> for a private CA\) in DATABASE_URL$/);
    }
    expect(line('postgres://s@db.internal/settle?sslmode=require&uselibpqcompat=true').line).toMatch(
      /does not verify the server certificate/,
    );
  });

  it('accepts a loopback server without TLS or verification, and reads PGSSLMODE when the URL says nothing', () => {
    expect(line('postgres://s@127.0.0.1:5432/settle')).toEqual({ level: 'ok', line: 'database tls: none (a loopback server)' });
    expect(line('postgres://s@localhost/settle?sslmode=no-verify').level).toBe('ok');
    expect(readDatabaseTls('postgres://s@db.internal/settle', { PGSSLMODE: 'no-verify' }).verification).toBe('unverified');
    expect(readDatabaseTls('postgres://s@db.internal/settle?sslmode=disable', { PGSSLMODE: 'verify-full' }).verification).toBe('off');
    expect(readDatabaseTls('postgres://s@db.internal/settle?sslcert=/c.pem&sslkey=/k.pem&sslrootcert=/ca.pem')).toMatchObject({
      verification: 'full',
      clientCertificate: true,
    });
  });
});
