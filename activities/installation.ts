/**
 * Where this installation of settle lives, and its local, git-ignored state directory. Lives at
 * the bottom of the side-effect layer so that both the worker's policy (its default workspace
 * root) and the stack launcher (stack/paths.ts) can use it without importing each other.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/**
 * The nearest folder above this module holding a package.json: the checkout when this runs from
 * the sources (activities/), the installed package when it runs compiled (dist/activities/).
 */
function packageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return `${dir}${path.sep}`;
    if (path.dirname(dir) === dir) throw new Error(`settle: no package.json above ${from}`);
  }
}

export const PROJECT_ROOT = packageRoot(fileURLToPath(new URL('.', import.meta.url)));
export const SETTLE_DIR = path.join(PROJECT_ROOT, '.settle');
