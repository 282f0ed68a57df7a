/**
 * Where this installation of settle lives (the sandbox hides it from commands). Its state
 * directory is the project's, not the installation's: state-dir.ts.
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
