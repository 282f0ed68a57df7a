/**
 * The Temporal server's (cmd/server, v1.29.1) configuration for a single-process cluster on
 * PostgreSQL, as scripts/production-lane.ts and the TLS tests start it: every service on loopback,
 * ports given, and optionally TLS (or mTLS) on the frontend.
 */
import net from 'node:net';

/** TLS on the frontend: its certificate and key, the CA clients' certificates must chain to (mTLS), and the system worker's own client certificate. */
export interface FrontendTls {
  certFile: string;
  keyFile: string;
  caFile: string;
  /** The name the frontend's certificate holds, which the server's own clients check. */
  serverName: string;
  requireClientAuth: boolean;
  /** The certificate the server's system worker presents to its frontend. */
  systemWorker: { certFile: string; keyFile: string };
}

function tlsYaml(t: FrontendTls): string {
  return `
  tls:
    frontend:
      server:
        certFile: "${t.certFile}"
        keyFile: "${t.keyFile}"
        requireClientAuth: ${t.requireClientAuth}
        clientCaFiles:
          - "${t.caFile}"
      client:
        serverName: "${t.serverName}"
        rootCaFiles:
          - "${t.caFile}"
    systemWorker:
      certFile: "${t.systemWorker.certFile}"
      keyFile: "${t.systemWorker.keyFile}"
      client:
        serverName: "${t.serverName}"
        rootCaFiles:
          - "${t.caFile}"`;
}

export function temporalServerConfig(p: {
  pgHost: string;
  pgPort: string;
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  membership: number[];
  pprof: number;
  metrics: number;
  /** PostgreSQL's user for Temporal's databases (default temporal/temporal). */
  pgUser?: string;
  pgPassword?: string;
  /** TLS on the frontend (and the system worker's client certificate for it); mTLS when requireClientAuth. */
  tls?: FrontendTls;
}): string {
  const store = (db: string, conns: number) => `      sql:
        pluginName: "postgres12"
        databaseName: "${db}"
        connectAddr: "${p.pgHost}:${p.pgPort}"
        connectProtocol: "tcp"
        user: "${p.pgUser ?? 'temporal'}"
        password: "${p.pgPassword ?? 'temporal'}"
        maxConns: ${conns}
        maxIdleConns: ${conns}
        maxConnLifetime: "1h"`;
  const service = (grpc: number, membership: number, extra = '') => `    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${extra}`;
  return `log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:
${store('temporal', 20)}
    postgres-visibility:
${store('temporal_visibility', 10)}
global:${p.tls ? tlsYaml(p.tls) : ''}
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  pprof:
    port: ${p.pprof}
  metrics:
    prometheus:
      framework: "tally"
      timerType: "histogram"
      listenAddress: "127.0.0.1:${p.metrics}"
services:
  frontend:
${service(p.frontend, p.membership[0]!, `\n      httpPort: ${p.frontendHttp}`)}
  matching:
${service(p.matching, p.membership[1]!)}
  history:
${service(p.history, p.membership[2]!)}
  worker:
${service(p.worker, p.membership[3]!)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${p.frontend}"
dcRedirectionPolicy:
  policy: "noop"
dynamicConfigClient:
  filepath: "config/dynamicconfig/lane.yaml"
  pollInterval: "10s"
`;
}

/** Free loopback ports below 32768, found by binding candidates. */
export async function lowFreePorts(n: number): Promise<number[]> {
  const found = new Set<number>();
  while (found.size < n) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(candidate, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) found.add(candidate);
  }
  return [...found];
}
