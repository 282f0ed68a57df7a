/**
 * The console's sockets: one port on both loopback addresses, 127.0.0.1 and [::1]. A browser
 * resolves the console's `*.localhost` name to both and may try [::1] first: were [::1] on that
 * port free, any local program could take it and receive the console's requests, cookie included.
 * Without IPv6 loopback (EADDRNOTAVAIL) nobody can take it either, and 127.0.0.1 alone is enough.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackListener {
  port: number;
  close(): Promise<void>;
}

const ATTEMPTS = 5;

/** Listens on `port` (0: a free one) on both loopback addresses; throws naming `--port` when it cannot. */
export async function listenOnLoopback(handler: http.RequestListener, port: number): Promise<LoopbackListener> {
  for (let attempt = 1; ; attempt++) {
    const v4 = await listen(http.createServer(handler), '127.0.0.1', port);
    const bound = (v4.address() as AddressInfo).port;
    try {
      const v6 = await listen(http.createServer(handler), '::1', bound);
      return { port: bound, close: () => closeAll([v4, v6]) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT') return { port: bound, close: () => closeAll([v4]) };
      await closeAll([v4]);
      // A free port chosen on 127.0.0.1 may be taken on [::1]: choose again.
      if (code === 'EADDRINUSE' && port === 0 && attempt < ATTEMPTS) continue;
      throw new Error(
        `--port: [::1]:${bound} is taken by another program, which a browser would reach under the console's name (${code}); choose another port`,
      );
    }
  }
}

function listen(server: http.Server, host: string, port: number): Promise<http.Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

function closeAll(servers: http.Server[]): Promise<void> {
  return Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        }),
    ),
  ).then(() => undefined);
}
