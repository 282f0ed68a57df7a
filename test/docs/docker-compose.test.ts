/**
 * docker-compose.yml keeps to docs/deploying.md: workers that share a workspace volume are one
 * host (one SETTLE_HOST_ID, shell run files on a shared volume, the workspace root where the
 * volume is), every variable it sets is documented, and its Temporal server is the version the
 * production lane tests. Docker cannot pull images here, so this reads the file; the checker is
 * run on a wrong file first, so that one that finds nothing cannot pass.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
}

const isWorker = (s: Service) => s.command?.some((part) => /workers\/worker\.[jt]s$/.test(part)) ?? false;

/** What a compose file does that docs/deploying.md says must not be done; empty when it keeps to it. */
function composeProblems(compose: { services: Record<string, Service> }, documented: string, temporalVersion: string): string[] {
  const problems: string[] = [];
  const workers = Object.entries(compose.services).filter(([, s]) => isWorker(s));
  if (workers.length === 0) problems.push('no settle worker service');
  const hostsBySharedVolume = new Map<string, Set<string>>();
  for (const [name, service] of workers) {
    const env = service.environment ?? {};
    const mounts = new Map((service.volumes ?? []).map((v) => [v.split(':')[1]!, v.split(':')[0]!]));
    for (const variable of Object.keys(env)) {
      if (!documented.includes(`\`${variable}\``)) problems.push(`${name}: ${variable} is not in docs/configuration.md`);
    }
    const root = env.SETTLE_WORKSPACE_ROOT;
    if (!root || !mounts.has(root)) problems.push(`${name}: SETTLE_WORKSPACE_ROOT must be where its workspace volume is mounted`);
    const runs = env.SETTLE_RUNS_DIR;
    if (!runs || !mounts.has(runs))
      problems.push(`${name}: SETTLE_RUNS_DIR must be on a volume (a recreated container loses the run files)`);
    if (root && mounts.has(root)) {
      const volume = mounts.get(root)!;
      const hosts = hostsBySharedVolume.get(volume) ?? new Set();
      hosts.add(env.SETTLE_HOST_ID ?? `<derived for ${name}>`);
      hostsBySharedVolume.set(volume, hosts);
    }
  }
  for (const [volume, hosts] of hostsBySharedVolume) {
    if (hosts.size > 1 || [...hosts].some((h) => h.startsWith('<derived'))) {
      problems.push(`workers sharing volume ${volume} must set one SETTLE_HOST_ID (got ${[...hosts].join(', ')})`);
    }
  }
  const temporal = Object.values(compose.services).find((s) => s.image?.startsWith('temporalio/auto-setup:'));
  if (temporal?.image !== `temporalio/auto-setup:${temporalVersion.replace(/^v/, '')}`) {
    problems.push(`the Temporal server image must be ${temporalVersion} (the production lane's), got ${temporal?.image ?? 'none'}`);
  }
  return problems;
}

const documented = fs.readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8');
const temporalVersion = /^VERSION=(v[\d.]+)$/m.exec(fs.readFileSync(path.join(ROOT, 'scripts/production-lane.sh'), 'utf8'))?.[1];

describe('docker-compose.yml', () => {
  it('the checker finds what a wrong file does', () => {
    const worker = (env: Record<string, string>): Service => ({
      command: ['node', 'workers/worker.ts'],
      environment: env,
      volumes: ['workspaces:/workspaces'],
    });
    const wrong = {
      services: {
        temporal: { image: 'temporalio/auto-setup:1.20.0' },
        a: worker({ SETTLE_WORKSPACE_ROOT: '/workspaces', SETTLE_NOT_A_SETTING: '1' }),
        b: worker({ SETTLE_WORKSPACE_ROOT: '/elsewhere', SETTLE_RUNS_DIR: '/runs' }),
      },
    };
    expect(composeProblems(wrong, documented, 'v1.29.1')).toEqual([
      'a: SETTLE_NOT_A_SETTING is not in docs/configuration.md',
      'a: SETTLE_RUNS_DIR must be on a volume (a recreated container loses the run files)',
      'b: SETTLE_WORKSPACE_ROOT must be where its workspace volume is mounted',
      'b: SETTLE_RUNS_DIR must be on a volume (a recreated container loses the run files)',
      'workers sharing volume workspaces must set one SETTLE_HOST_ID (got <derived for a>)',
      "the Temporal server image must be v1.29.1 (the production lane's), got temporalio/auto-setup:1.20.0",
    ]);
  });

  it('keeps to docs/deploying.md: its workers are one host with their run files on a volume, its settings documented, its Temporal the tested one', () => {
    expect(temporalVersion).toMatch(/^v\d/);
    // `merge`: the second worker is the first's anchor merged (`<<: *settle-worker`), as Compose reads it.
    const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, Service>;
    };
    expect(
      Object.entries(compose.services)
        .filter(([, s]) => isWorker(s))
        .map(([name]) => name),
    ).toEqual(['worker-1', 'worker-2']);
    expect(composeProblems(compose, documented, temporalVersion!)).toEqual([]);
  });
});
