/**
 * Runs before `npm test` (the `pretest` script): the system programs the suite drives must be
 * there, or nothing is worth starting — without them each sandbox test would wait for its own
 * timeout and fail. Installed where this machine lets us (root, or sudo without a password, on
 * a Debian-like system); otherwise one line naming the exact command, and exit 1 within seconds.
 *
 *   bubblewrap  the shell tool's sandbox (test/tools, test/chaos, test/e2e)
 *   chromium    the Web UI test (test/ui; SETTLE_CHROMIUM names another binary)
 *   prometheus  promtool, for the alert rules' unit tests (test/ops; SETTLE_PROMTOOL names another binary)
 *   postgresql-15  a primary and streaming replicas for the record-store checks (test/store, test/cli;
 *                  SETTLE_PG15_BIN names another directory); only its programs are used, never the
 *                  cluster the package may start
 *   pgbouncer   a pooler in each mode in front of them (test/store; SETTLE_PGBOUNCER names another binary)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

interface Prerequisite {
  /** The Debian package that provides it. */
  pkg: string;
  present: () => boolean;
}

function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => {
    try {
      fs.accessSync(path.join(dir || '.', program), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

const PREREQUISITES: Prerequisite[] = [
  { pkg: 'bubblewrap', present: () => (process.env.SETTLE_BWRAP ? fs.existsSync(process.env.SETTLE_BWRAP) : onPath('bwrap')) },
  { pkg: 'chromium', present: () => fs.existsSync(process.env.SETTLE_CHROMIUM ?? '/usr/bin/chromium') },
  {
    pkg: 'prometheus',
    present: () => (process.env.SETTLE_PROMTOOL ? fs.existsSync(process.env.SETTLE_PROMTOOL) : onPath('promtool')),
  },
  {
    pkg: 'postgresql-15',
    present: () => fs.existsSync(path.join(process.env.SETTLE_PG15_BIN ?? '/usr/lib/postgresql/15/bin', 'pg_basebackup')),
  },
  { pkg: 'pgbouncer', present: () => fs.existsSync(process.env.SETTLE_PGBOUNCER ?? '/usr/sbin/pgbouncer') },
];

function installer(): string[] | null {
  if (!onPath('apt-get')) return null;
  if (process.getuid?.() === 0) return [];
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0 ? ['sudo', '-n'] : null;
}

const missing = PREREQUISITES.filter((p) => !p.present()).map((p) => p.pkg);
if (missing.length) {
  const command = `apt-get install -y ${missing.join(' ')}`;
  const prefix = installer();
  if (!prefix) {
    console.error(
      `settle tests need ${missing.join(' and ')}: run \`sudo ${command}\` (Debian/Ubuntu; the same packages elsewhere), then npm test again`,
    );
    process.exit(1);
  }
  console.error(`settle tests: installing ${missing.join(', ')} (${[...prefix, 'apt-get'].join(' ')})`);
  const run = (args: string[]) => {
    const [file, ...rest] = [...prefix, ...args];
    execFileSync(file!, rest, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  };
  run(['apt-get', 'update', '-qq']);
  run(['apt-get', 'install', '-y', '-qq', ...missing]);
  const still = PREREQUISITES.filter((p) => !p.present()).map((p) => p.pkg);
  if (still.length) {
    console.error(`settle tests need ${still.join(' and ')}: \`${command}\` did not provide ${still.length > 1 ? 'them' : 'it'}`);
    process.exit(1);
  }
}
