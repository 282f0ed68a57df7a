/**
 * Where a project keeps settle's local, git-ignored state: `settle dev`'s PostgreSQL data and
 * passwords, the development operator key, dev.json, the console's URL, the default workspace
 * root and the cached Temporal CLI. The CLI, `npm run worker` and a team's own worker all resolve
 * it the same way, so they find the same state.
 *
 * Never inside node_modules: `npm ci` wipes it, and secrets do not belong in a package directory.
 * Lives beside installation.ts at the bottom of the side-effect layer (the worker's default
 * workspace root and the stack launcher both use it).
 */
import fs from 'node:fs';
import path from 'node:path';

/** Names the state directory outright (absolute, or relative to the current directory). */
export const STATE_DIR_VARIABLE = 'SETTLE_STATE_DIR';

/**
 * `SETTLE_STATE_DIR` when set; else `.settle` in the project: the nearest directory, from `cwd`
 * up, that holds a package.json and is not inside node_modules; else `.settle` in the nearest
 * directory not inside node_modules (a directory without a project).
 */
export function resolveStateDir(cwd: string, env: NodeJS.ProcessEnv): string {
  const named = env[STATE_DIR_VARIABLE];
  if (named) {
    const dir = path.resolve(cwd, named);
    if (insideNodeModules(dir)) throw new Error(`${STATE_DIR_VARIABLE}: must not lie inside node_modules (got ${dir})`);
    return dir;
  }
  let outside: string | null = null;
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (!insideNodeModules(dir)) {
      outside ??= dir;
      if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, '.settle');
    }
    if (path.dirname(dir) === dir) return path.join(outside ?? dir, '.settle');
  }
}

function insideNodeModules(dir: string): boolean {
  return dir.split(path.sep).includes('node_modules');
}

export const SETTLE_DIR = resolveStateDir(process.cwd(), process.env);
