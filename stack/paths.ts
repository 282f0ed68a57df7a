/** Where the project keeps its local, git-ignored state (resolved with the worker's side: activities/state-dir.ts). */
import path from 'node:path';
import { SETTLE_DIR } from '../activities/state-dir';

export { PROJECT_ROOT } from '../activities/installation';
export { SETTLE_DIR, STATE_DIR_VARIABLE } from '../activities/state-dir';
/** The cached Temporal CLI (stack/temporal.ts): this repository's `.settle/bin`, a project's own. */
export const BIN_DIR = path.join(SETTLE_DIR, 'bin');
