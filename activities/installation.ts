/**
 * Where this installation of settle lives, and its local, git-ignored state directory. Lives at
 * the bottom of the side-effect layer so that both the worker's policy (its default workspace
 * root) and the stack launcher (stack/paths.ts) can use it without importing each other.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SETTLE_DIR = path.join(PROJECT_ROOT, '.settle');
