/**
 * The one line `settle doctor` and worker start give about how they reach Temporal: plaintext,
 * TLS, mTLS or an API key (client/connection.ts's temporalSecurity), what the server's certificate
 * is checked against, and the fix when a non-loopback server is reached in the clear.
 */
import type { FindingLevel } from '../core/record-store-requirements';
import { temporalSecurity, type TemporalTarget } from './connection';

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/;

export function temporalTlsFinding(target: TemporalTarget): { level: FindingLevel; line: string } {
  const { address, tls } = target.connectionOptions;
  const security = temporalSecurity(target.connectionOptions);
  const options = typeof tls === 'object' && tls !== null ? tls : {};
  // The SDK has no way to skip verification: a TLS connection always checks the certificate and its name.
  const verified =
    `server certificate verified (CA from ${options.serverRootCACertificate ? 'TEMPORAL_TLS_SERVER_CA_CERT_PATH or the profile' : 'the system'}, ` +
    `name ${options.serverNameOverride ?? address.replace(/:\d+$/, '')})`;
  const local = LOOPBACK.test(address);
  switch (security) {
    case 'api key':
      return { level: 'ok', line: `temporal tls: TLS with an API key, ${verified}` };
    case 'mtls':
      return { level: 'ok', line: `temporal tls: mTLS (client certificate sent), ${verified}` };
    case 'tls':
      return { level: 'ok', line: `temporal tls: TLS, ${verified}` };
    case 'api key without tls':
      return {
        level: 'warn',
        line: `temporal tls: none, yet an API key is sent to ${address} in the clear: remove TEMPORAL_TLS=false (an API key turns TLS on)`,
      };
    case 'plaintext':
      return local
        ? { level: 'ok', line: 'temporal tls: none (a loopback server)' }
        : {
            level: 'warn',
            line: `temporal tls: none to ${address}: set TEMPORAL_TLS=true (with TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH for mTLS), or a profile's tls section`,
          };
  }
}
