/**
 * Where settle connects to Temporal, loaded the standard way (docs/design.md#layout): the
 * `@temporalio/envconfig` profile file and environment — TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
 * TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE — so workers, the
 * client and the CLI reach Temporal Cloud or a self-hosted cluster (TLS, mTLS, API keys) as
 * every Temporal SDK and the `temporal` CLI do. settle adds only the task queue
 * (TEMPORAL_TASK_QUEUE, default `settle`).
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';

export const DEFAULT_TASK_QUEUE = 'settle';
export const DEFAULT_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_NAMESPACE = 'default';

/** Options both `Connection.connect` (client) and `NativeConnection.connect` (worker) accept. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: ReturnType<typeof loadClientConnectConfig>['connectionOptions']['tls'];
  apiKey?: string;
  metadata?: Record<string, string>;
}

export interface TemporalTarget {
  connectionOptions: TemporalConnectionOptions;
  namespace: string;
  taskQueue: string;
  /** Whether the address came from an override, the environment or a profile (not the default). */
  addressConfigured: boolean;
}

export interface TargetOverrides {
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

/**
 * The Temporal target from the envconfig profile and environment, with explicit overrides on top
 * (e.g. the address of a stack this process started).
 */
export function loadTemporalTarget(overrides: TargetOverrides = {}, env: NodeJS.ProcessEnv = process.env): TemporalTarget {
  const { connectionOptions, namespace } = loadClientConnectConfig({
    // An empty variable is an unset one, as `TEMPORAL_TLS_CLIENT_CERT_PATH= settle …` means.
    overrideEnvVars: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '')),
  });
  const { address, tls, apiKey, metadata } = connectionOptions;
  return {
    connectionOptions: {
      address: overrides.address ?? address ?? DEFAULT_ADDRESS,
      ...(tls !== undefined ? { tls } : {}),
      ...(typeof apiKey === 'string' ? { apiKey } : {}),
      ...(metadata ? { metadata: metadata as Record<string, string> } : {}),
    },
    namespace: overrides.namespace ?? namespace ?? DEFAULT_NAMESPACE,
    taskQueue: overrides.taskQueue ?? (env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE),
    addressConfigured: Boolean(overrides.address ?? address),
  };
}

/** How a connection is secured, as the SDK applies its options: an API key turns TLS on unless `tls` is false. */
export type TemporalSecurity = 'plaintext' | 'tls' | 'mtls' | 'api key' | 'api key without tls';

export function temporalSecurity({ tls, apiKey }: Pick<TemporalConnectionOptions, 'tls' | 'apiKey'>): TemporalSecurity {
  const on = tls === undefined || tls === null ? apiKey !== undefined : tls !== false;
  if (apiKey !== undefined) return on ? 'api key' : 'api key without tls';
  if (!on) return 'plaintext';
  return typeof tls === 'object' && tls !== null && tls.clientCertPair ? 'mtls' : 'tls';
}

/** A one-line description for logs: never the API key or certificates. */
export function describeTarget(target: TemporalTarget): string {
  return `${target.connectionOptions.address} namespace=${target.namespace} queue=${target.taskQueue} (${temporalSecurity(target.connectionOptions)})`;
}
