/** Where the project keeps its local, git-ignored state. */
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SETTLE_DIR = path.join(PROJECT_ROOT, '.settle');
export const BIN_DIR = path.join(SETTLE_DIR, 'bin');
