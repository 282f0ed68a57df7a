/**
 * The dev stack's Web UI, behind a proxy that answers only its own Host. The Temporal UI serves
 * whatever Host a request names, so a page under a DNS name rebound to 127.0.0.1 is same-origin
 * with it: it reads the UI's CSRF cookie and, through the UI's API, histories, and terminates
 * and restarts workflows. This proxy forwards a request only when its Host is one the operator's
 * browser uses (`127.0.0.1:PORT`, `localhost:PORT`) and refuses any other with 421, which a
 * rebound name always carries. The UI itself listens where no rebound name is pointed: a random
 * 127.x.y.z address and port (stack/temporal.ts), never printed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HostCheckProxy {
  port: number;
  close(): Promise<void>;
}

export interface HostCheckProxyOptions {
  /** Where the proxy listens (the UI's public address). */
  listen: { host: string; port: number };
  /** The UI it forwards to. */
  target: { host: string; port: number };
  /** The Host header values admitted, exactly (lower case), e.g. `127.0.0.1:8233`. */
  hosts: readonly string[];
}

export async function startHostCheckProxy(options: HostCheckProxyOptions): Promise<HostCheckProxy> {
  const admitted = new Set(options.hosts);
  const server = http.createServer((req, res) => {
    const host = (req.headers.host ?? '').toLowerCase();
    if (!admitted.has(host)) {
      res.writeHead(421, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`Host: must be ${options.hosts.join(' or ')} (got ${JSON.stringify(req.headers.host ?? '')})\n`);
      return;
    }
    const upstream = http.request(
      { host: options.target.host, port: options.target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`the Temporal Web UI did not answer (${err.message})\n`);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.listen.host, port: options.listen.port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
