/**
 * What the worker's operator allows, from the worker's environment (docs/security.md). A
 * trajectory spec (its author, or a model) can never widen any of it:
 *
 *   SETTLE_WORKSPACE_ROOT       every workspace must lie strictly inside this directory
 *                               (default: `.settle/workspaces` of the worker's project, state-dir.ts)
 *   SETTLE_MODEL_ENDPOINTS      comma-separated base URLs a model-driven trajectory may call
 *                               (default: none — model-driven trajectories are refused)
 *   SETTLE_MODEL_KEY_ENVS       comma-separated names of variables that may be sent as a model's
 *                               API key (default: none); settle's own secrets are never allowed
 *   SETTLE_ALLOW_NO_CAPABILITY  `1`: a worker holding capability keys still runs trajectories
 *                               without a capability (development only; logged loudly at start)
 *   SETTLE_LANES                `tool=local|activity,…`: the lane a tool's calls run in, over
 *                               what its definition declares (core/tools/lanes.ts)
 */
import fs from 'node:fs';
import path from 'node:path';
import { InputError } from '../core/errors';
import { canonicalPath } from '../core/paths';
import { isReservedVariable, RESERVED_VARIABLES_RULE } from '../core/reserved-variables';
import { SETTLE_DIR } from './state-dir';
import { LANES_VARIABLE, parseLaneOverrides, type Lane } from '../core/tools/lanes';

export interface WorkerPolicy {
  /** Real path of the directory every workspace must lie strictly inside. */
  workspaceRoot: string;
  /** Allowed model base URLs, normalised (modelEndpoint()). */
  modelEndpoints: readonly string[];
  /** Names of environment variables that may be sent as a model API key. */
  modelKeyEnvs: readonly string[];
  /** Development mode: trajectories without a capability run on a worker that holds keys. */
  allowNoCapability: boolean;
  /** The operator's lane per tool (SETTLE_LANES); absent: each tool's definition decides. */
  lanes?: Readonly<Record<string, Lane>>;
}

export const WORKSPACE_ROOT_VARIABLE = 'SETTLE_WORKSPACE_ROOT';
export const MODEL_ENDPOINTS_VARIABLE = 'SETTLE_MODEL_ENDPOINTS';
export const MODEL_KEY_ENVS_VARIABLE = 'SETTLE_MODEL_KEY_ENVS';
export const ALLOW_NO_CAPABILITY_VARIABLE = 'SETTLE_ALLOW_NO_CAPABILITY';

/** The default root: a directory that holds nothing but workspaces (not /tmp, which holds everyone's files and sockets). */
export const DEFAULT_WORKSPACE_ROOT = path.join(SETTLE_DIR, 'workspaces');

export { isReservedVariable };

/** The form base URLs are compared in: WHATWG-normalised, without trailing slashes. */
export function modelEndpoint(url: string): string {
  return new URL(url).href.replace(/\/+$/, '');
}

export function loadWorkerPolicy(env: NodeJS.ProcessEnv = process.env): WorkerPolicy {
  return makeWorkerPolicy({
    workspaceRoot: env[WORKSPACE_ROOT_VARIABLE] || DEFAULT_WORKSPACE_ROOT,
    modelEndpoints: list(env[MODEL_ENDPOINTS_VARIABLE]),
    modelKeyEnvs: list(env[MODEL_KEY_ENVS_VARIABLE]),
    allowNoCapability: flag(env[ALLOW_NO_CAPABILITY_VARIABLE], ALLOW_NO_CAPABILITY_VARIABLE),
    lanes: parseLaneOverrides(env[LANES_VARIABLE]),
  });
}

/** Checks a policy and normalises it; throws InputError naming the variable. Creates the default root (0700). */
export function makeWorkerPolicy(p: WorkerPolicy): WorkerPolicy {
  const root = canonicalRoot(p.workspaceRoot);
  const modelEndpoints = p.modelEndpoints.map((url, i) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InputError(`${MODEL_ENDPOINTS_VARIABLE}[${i}]`, `be an http(s) URL (got ${JSON.stringify(url)})`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new InputError(`${MODEL_ENDPOINTS_VARIABLE}[${i}]`, `be an http(s) URL (got ${JSON.stringify(url)})`);
    return modelEndpoint(url);
  });
  for (const [i, name] of p.modelKeyEnvs.entries()) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new InputError(`${MODEL_KEY_ENVS_VARIABLE}[${i}]`, `be an environment variable name (got ${JSON.stringify(name)})`);
    if (isReservedVariable(name)) throw new InputError(`${MODEL_KEY_ENVS_VARIABLE}[${i}]`, `${RESERVED_VARIABLES_RULE} (got ${name})`);
  }
  return {
    workspaceRoot: root,
    modelEndpoints,
    modelKeyEnvs: [...p.modelKeyEnvs],
    allowNoCapability: p.allowNoCapability,
    ...(p.lanes ? { lanes: { ...p.lanes } } : {}),
  };
}

function canonicalRoot(root: string): string {
  let lexical: string;
  try {
    lexical = canonicalPath(root, WORKSPACE_ROOT_VARIABLE);
  } catch (err) {
    if (err instanceof InputError) throw new InputError(WORKSPACE_ROOT_VARIABLE, `be an absolute directory path (${err.rule})`);
    throw err;
  }
  if (lexical === '/') throw new InputError(WORKSPACE_ROOT_VARIABLE, 'not be / (a root holds workspaces, not the host)');
  if (lexical === DEFAULT_WORKSPACE_ROOT) ensureDefaultRoot(lexical);
  let real: string;
  try {
    real = fs.realpathSync(lexical);
  } catch (err) {
    throw new InputError(WORKSPACE_ROOT_VARIABLE, `name an existing directory (${(err as Error).message})`);
  }
  if (!fs.statSync(real).isDirectory()) throw new InputError(WORKSPACE_ROOT_VARIABLE, `name a directory (got ${real})`);
  if (real === '/') throw new InputError(WORKSPACE_ROOT_VARIABLE, `not resolve to / (${lexical} → /)`);
  return real;
}

/**
 * The default root, made 0711: sandboxed commands run as an unprivileged user, whose bubblewrap
 * must pass through the root to reach a workspace (0700 fails with "Can't find source path …
 * Permission denied"); no one but its owner may list or write it. A root an earlier version made
 * 0700 is opened up the same way.
 */
function ensureDefaultRoot(root: string): void {
  fs.mkdirSync(root, { recursive: true, mode: 0o711 });
  const st = fs.statSync(root);
  if (st.uid === process.getuid?.() && (st.mode & 0o777) === 0o700) fs.chmodSync(root, 0o711);
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function flag(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw new InputError(name, `be 1 or 0 (got ${JSON.stringify(value)})`);
}
