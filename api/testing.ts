/** `settle/testing`: a local Temporal dev server and Postgres for tests. */
export { startStack } from '../stack/index';
export type { Stack, StartStackOptions } from '../stack/index';
