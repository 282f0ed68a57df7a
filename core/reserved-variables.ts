/**
 * Environment variables that hold settle's own secrets or its infrastructure's (capability keys,
 * the key secret, the database URL, Temporal credentials): never sent to a model server, whatever a
 * spec or the worker's configuration says (docs/security.md).
 */
export function isReservedVariable(name: string): boolean {
  return /^(SETTLE_|TEMPORAL_|PG)/.test(name) || name === 'DATABASE_URL';
}

export const RESERVED_VARIABLES_RULE = "not name settle's own secrets or its infrastructure's (SETTLE_*, TEMPORAL_*, PG*, DATABASE_URL)";
