/**
 * The egress proxy of one shell call (docs/sandbox.md#network): an HTTP proxy on a unix socket
 * that is bound into the sandbox, the sandbox's only way out of its own network namespace.
 * `CONNECT name:port` opens a tunnel (HTTPS and anything else over TCP); an absolute-URI request
 * (`GET http://name/…`) is forwarded as plain HTTP. Each target is decided by egress-policy.ts;
 * a refusal is `403` with the reason as its body. Everything closes when the call ends.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { decideEgress, type EgressPolicy } from './egress-policy';

/** At most this many connections from one call's sandbox at once (the rest wait in the socket's backlog). */
const MAX_CONNECTIONS = 64;
/** Request headers that concern the proxy hop only, never forwarded. */
const HOP_BY_HOP = ['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade'];

export interface EgressProxy {
  /** The unix socket to bind into the sandbox. */
  socketPath: string;
  stats: { allowed: number; refused: string[] };
  close(): Promise<void>;
}

/**
 * Starts a proxy for one call. The socket lies in a fresh 0700 directory owned by `owner` (the
 * sandbox's host user, which must reach it), and only that user may connect.
 */
export async function startEgressProxy(policy: EgressPolicy, owner?: { uid: number; gid: number }): Promise<EgressProxy> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-egress-'));
  const socketPath = path.join(dir, 'proxy.sock');
  const stats = { allowed: 0, refused: [] as string[] };
  const open = new Set<Duplex>();
  const track = (s: Duplex) => {
    open.add(s);
    s.once('close', () => open.delete(s));
    s.on('error', () => s.destroy());
  };
  const refuse = (reason: string) => {
    if (stats.refused.length < 20) stats.refused.push(reason);
    return `settle egress refused: ${reason}\n`;
  };

  const server = http.createServer({ requireHostHeader: false });
  server.maxConnections = MAX_CONNECTIONS;
  server.on('connection', track);

  server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    void decideEgress(req.url ?? '', policy).then(
      (d) => {
        if (!d.allowed) {
          const body = refuse(d.reason);
          client.end(
            `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
          );
          return;
        }
        stats.allowed++;
        const upstream = net.connect({ host: d.address, port: d.target.port! });
        track(upstream);
        let connected = false;
        upstream.once('connect', () => {
          connected = true;
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        upstream.once('error', (err) => {
          if (connected) client.destroy();
          else if (!client.destroyed)
            client.end(`HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\nsettle egress: ${d.target.host}: ${err.message}\n`);
        });
        client.once('close', () => upstream.destroy());
      },
      () => client.destroy(),
    );
  });

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const send = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' });
      res.end(body);
    };
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return send(400, refuse(`a proxy request needs an absolute http:// URL (got ${JSON.stringify(req.url)})`));
    }
    if (url.protocol !== 'http:') return send(400, refuse(`only http:// is forwarded; use CONNECT for ${url.protocol}`));
    const port = url.port ? Number(url.port) : 80;
    void decideEgress(`${url.hostname}:${port}`, policy).then(
      (d) => {
        if (!d.allowed) return send(403, refuse(d.reason));
        stats.allowed++;
        const headers = { ...req.headers };
        for (const h of HOP_BY_HOP) delete headers[h];
        const upstream = http.request({
          host: d.address,
          port,
          method: req.method,
          path: `${url.pathname}${url.search}`,
          headers: { ...headers, host: url.host, connection: 'close' },
          agent: false,
        });
        upstream.on('socket', track);
        upstream.on('response', (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        });
        upstream.on('error', (err) => (res.headersSent ? res.destroy() : send(502, `settle egress: ${url.hostname}: ${err.message}\n`)));
        req.pipe(upstream);
      },
      () => res.destroy(),
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  fs.chmodSync(socketPath, 0o600);
  if (owner && process.getuid?.() === 0) {
    fs.chownSync(socketPath, owner.uid, owner.gid);
    fs.chownSync(dir, owner.uid, owner.gid);
  }

  return {
    socketPath,
    stats,
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
