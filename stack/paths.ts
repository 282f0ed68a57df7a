/** Where the project keeps its local, git-ignored state (defined with the worker's side: activities/installation.ts). */
import path from 'node:path';
import { SETTLE_DIR } from '../activities/installation';

export { PROJECT_ROOT, SETTLE_DIR } from '../activities/installation';
export const BIN_DIR = path.join(SETTLE_DIR, 'bin');
