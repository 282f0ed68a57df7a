/**
 * The certificates of the chaos harness's production topology (ClusterOptions.tls), from a local
 * CA made for the run: the Temporal frontend's (which requires a client certificate) and its system
 * worker's, one for the record store's servers and pooler, and the client certificate the workers
 * and the harness present to Temporal. Workers read only settle's own settings: TEMPORAL_TLS_*
 * (client/connection.ts) and DATABASE_URL's sslmode=verify-full.
 */
import type { ConnectionOptions } from '@temporalio/client';
import { loadTemporalTarget } from '../../client/connection';
import type { FrontendTls } from '../../stack/temporal-server-config';
import { createLocalCa, type LocalCa } from './local-ca';
import type { PoolerTls } from './postgres15';

/** The name the frontend's certificate holds, which its clients check (TEMPORAL_TLS_SERVER_NAME). */
export const TEMPORAL_SERVER_NAME = 'temporal.settle.test';

export interface TopologyTls {
  ca: LocalCa;
  /** The Temporal frontend: mTLS required. */
  frontend: FrontendTls;
  /** The record store's PostgreSQL servers and PgBouncer (all on 127.0.0.1). */
  recordStore: PoolerTls;
  /** TEMPORAL_TLS_* as an operator sets them for a worker (and the harness's own clients read). */
  temporalEnv: Record<string, string>;
  /** The same settings as this process's connection options (what settle's client makes of them). */
  connect: Pick<ConnectionOptions, 'tls'>;
}

export function issueTopologyTls(): TopologyTls {
  const ca = createLocalCa('settle chaos CA');
  const client = ca.issue('settle-worker', ['DNS:settle-worker']);
  const temporalEnv = {
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.certFile,
    TEMPORAL_TLS_SERVER_NAME: TEMPORAL_SERVER_NAME,
    TEMPORAL_TLS_CLIENT_CERT_PATH: client.certFile,
    TEMPORAL_TLS_CLIENT_KEY_PATH: client.keyFile,
  };
  const { tls } = loadTemporalTarget({}, temporalEnv).connectionOptions;
  return {
    ca,
    frontend: {
      ...ca.issue('frontend', [`DNS:${TEMPORAL_SERVER_NAME}`, 'IP:127.0.0.1']),
      caFile: ca.certFile,
      serverName: TEMPORAL_SERVER_NAME,
      requireClientAuth: true,
      systemWorker: ca.issue('system-worker', ['DNS:system-worker']),
    },
    recordStore: { ...ca.issue('record-store', ['IP:127.0.0.1']), caFile: ca.certFile },
    temporalEnv,
    connect: tls === undefined ? {} : { tls },
  };
}
