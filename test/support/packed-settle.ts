/**
 * settle as a consumer gets it: `npm pack` of this repository (its prepack builds dist/), and a
 * project outside the repository that installs the tarball offline, from the npm cache, through
 * a lock cut from this repository's (consumer-lock.ts). Used by test/package/ and test/examples/.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { consumerLock } from './consumer-lock';

const run = promisify(execFile);
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface PackedSettle {
  /** Absolute path of the tarball. */
  tarball: string;
  integrity: string;
  /** The files the tarball holds, relative to the package root. */
  files: string[];
  manifest: Parameters<typeof consumerLock>[0]['manifest'];
}

/** `npm pack` of this repository into `dir`. */
export async function packSettle(dir: string): Promise<PackedSettle> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 });
  const [report] = JSON.parse(stdout) as { filename: string; integrity: string; files: { path: string }[] }[];
  const tarball = path.join(dir, report!.filename);
  const manifest = JSON.parse((await run('tar', ['-xzOf', tarball, 'package/package.json'])).stdout) as PackedSettle['manifest'];
  return { tarball, integrity: report!.integrity, files: report!.files.map((f) => f.path), manifest };
}

export function npmCache(): string {
  return process.env.npm_config_cache ?? path.join(os.homedir(), '.npm');
}

/** A consumer's environment: nothing of this repository's (no tsx loader in NODE_OPTIONS, no npm_* of the test run). */
export function consumerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.tmpdir(), npm_config_cache: npmCache(), ...extra };
}

/** Runs `file args` in the consumer project `cwd`, with the consumer's environment unless given. */
export async function inConsumer(cwd: string, file: string, args: string[], env: NodeJS.ProcessEnv = consumerEnv()) {
  return run(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
}

/**
 * Makes `dir` a project that depends on the packed settle and installs it with `npm ci --offline`.
 * `project`: the consumer's package.json (its own dependencies, each in this repository's lock;
 * its `settle` dependency, if any, is pointed at the tarball). Without it: a bare project that
 * depends on settle and the Temporal client, worker and workflow packages.
 */
export async function installConsumer(dir: string, packed: PackedSettle, project?: ConsumerPackage): Promise<void> {
  const {
    dependencies = {},
    devDependencies,
    ...rest
  } = project ?? {
    dependencies: { '@temporalio/client': '^1.24.0', '@temporalio/worker': '^1.24.0', '@temporalio/workflow': '^1.24.0' },
  };
  const { settle: _settle, ...alongside } = dependencies;
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(packed.tarball, path.join(dir, path.basename(packed.tarball)));
  const { packageJson, lock } = consumerLock({
    repoLockFile: path.join(REPO, 'package-lock.json'),
    manifest: packed.manifest,
    tarball: packed.tarball,
    tarballIntegrity: packed.integrity,
    alongside,
    ...(devDependencies ? { devAlongside: devDependencies } : {}),
    ...(project ? { project: rest } : {}),
  });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(packageJson, null, 2));
  fs.writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2));
  await inConsumer(dir, 'npm', ['ci', '--offline', '--no-audit', '--no-fund']);
}

export interface ConsumerPackage {
  name?: string;
  version?: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [field: string]: unknown;
}
