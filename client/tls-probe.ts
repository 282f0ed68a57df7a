/**
 * Why a TLS connection to Temporal fails, in words and with the fix. gRPC reports a refused
 * handshake as "Failed to connect before the deadline" (the client) or a transport error of the
 * Rust core (the worker); one handshake made here with the same certificates names the cause.
 */
import net from 'node:net';
import tls from 'node:tls';
import { temporalSecurity, type TemporalTarget } from './connection';

const PROBE_MS = 5_000;

/** The cause and its fix when a TLS handshake with the target fails; null when it succeeds, or the target is plaintext. */
export async function tlsHandshakeProblem(target: TemporalTarget): Promise<string | null> {
  const options = target.connectionOptions;
  const security = temporalSecurity(options);
  if (security === 'plaintext' || security === 'api key without tls') return null;
  const t = typeof options.tls === 'object' && options.tls !== null ? options.tls : {};
  const [, host = '', port = '7233'] = /^\[?(.*?)\]?(?::(\d+))?$/.exec(options.address) ?? [];
  const servername = t.serverNameOverride ?? (net.isIP(host) ? undefined : host);
  const socket = tls.connect({
    host,
    port: Number(port),
    ALPNProtocols: ['h2'],
    ...(servername ? { servername } : {}),
    ...(t.serverRootCACertificate ? { ca: Buffer.from(t.serverRootCACertificate) } : {}),
    ...(t.clientCertPair ? { cert: Buffer.from(t.clientCertPair.crt), key: Buffer.from(t.clientCertPair.key) } : {}),
    // Verify the name the client verifies: the override when set (as gRPC does), else the address.
    checkServerIdentity: (_name, cert) => tls.checkServerIdentity(servername ?? host, cert),
  });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.once('close', () => reject(new Error('the server closed the connection during the TLS handshake')));
      // TLS 1.3: a server that requires a client certificate says so after the client's handshake ends.
      socket.once('secureConnect', () => setTimeout(resolve, 500));
      setTimeout(() => reject(new Error(`no TLS handshake within ${PROBE_MS / 1000} s`)), PROBE_MS);
    });
    return null;
  } catch (err) {
    return withFix(err as Error & { code?: string }, security === 'mtls');
  } finally {
    socket.destroy();
  }
}

function withFix(err: Error & { code?: string }, clientCertificate: boolean): string {
  const code = err.code ?? '';
  // OpenSSL's alert messages span lines and name source files: keep the alert's own words.
  const alert = /alert ([a-z ]+?)(?::|$)/m.exec(err.message)?.[1];
  // Node 24 appends a hint about --use-system-ca to an untrusted certificate: the fix below is settle's.
  const cause = alert ? `TLS alert: ${alert}` : err.message.split('\n')[0]!.replace(/; if the root CA is installed locally.*$/, '');
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${cause}: set TEMPORAL_TLS_SERVER_NAME to a name the frontend's certificate holds`;
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code) && !/ALERT/.test(code))
    return `${cause}: the frontend's certificate is not signed by a trusted CA: set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA that signed it`;
  if (/CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|BAD_CERTIFICATE|UNKNOWN_CA/.test(code))
    return clientCertificate
      ? `${cause}: the frontend refused this client certificate: use one signed by a CA the frontend trusts (its clientCaFiles)`
      : `${cause}: the frontend requires a client certificate (mTLS): set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH`;
  if (code === 'ECONNRESET' || /wrong version number|packet length too long/i.test(err.message))
    return `${cause}: the frontend may not serve TLS: check the address, or drop TEMPORAL_TLS for a plaintext loopback server`;
  return cause;
}
