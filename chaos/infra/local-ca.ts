/**
 * A throw-away certificate authority made with `openssl`, for the TLS tests and the chaos harness's
 * production topology: a CA, and certificates it signs for the names and addresses a client
 * connects by (P-256 keys, valid two days).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface IssuedCertificate {
  certFile: string;
  keyFile: string;
}

export interface LocalCa {
  dir: string;
  /** The CA's certificate: what a client trusts (sslrootcert, TEMPORAL_TLS_SERVER_CA_CERT_PATH). */
  certFile: string;
  /** A certificate for these subject alternative names (`IP:127.0.0.1`, `DNS:db.test`), for servers and clients alike. */
  issue(name: string, altNames: string[]): IssuedCertificate;
  remove(): void;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export function createLocalCa(commonName = 'settle test CA'): LocalCa {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-ca-'));
  openssl(
    [
      'req',
      '-x509',
      ...EC_KEY,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  return {
    dir,
    certFile: path.join(dir, 'ca.crt'),
    issue(name, altNames) {
      openssl(['req', '-new', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
      fs.writeFileSync(
        path.join(dir, `${name}.ext`),
        [
          `subjectAltName=${altNames.join(',')}`,
          'basicConstraints=CA:FALSE',
          'keyUsage=critical,digitalSignature',
          'extendedKeyUsage=serverAuth,clientAuth',
          '',
        ].join('\n'),
      );
      openssl(
        [
          'x509',
          '-req',
          '-in',
          `${name}.csr`,
          '-CA',
          'ca.crt',
          '-CAkey',
          'ca.key',
          '-CAcreateserial',
          '-out',
          `${name}.crt`,
          '-days',
          '2',
          '-extfile',
          `${name}.ext`,
        ],
        dir,
      );
      return { certFile: path.join(dir, `${name}.crt`), keyFile: path.join(dir, `${name}.key`) };
    },
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
