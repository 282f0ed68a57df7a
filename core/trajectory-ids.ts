/**
 * The child id namespace (docs/design.md#sub-agents): a sub-agent of trajectory `x` runs as
 * `x/sub-<n>`. Ids containing `/sub-` are reserved for those children, so nobody can start a root
 * trajectory `x/sub-1` first and block `x` from spawning its sub-agent (or pose as it).
 */
export const CHILD_ID_INFIX = '/sub-';

export function childId(parentId: string, n: number): string {
  return `${parentId}${CHILD_ID_INFIX}${n}`;
}

/** True when a root trajectory (one without a parent workflow) may not use this id. */
export function isReservedChildId(id: string): boolean {
  return id.includes(CHILD_ID_INFIX);
}

/** The parent this child id belongs to (`x` for `x/sub-3`), or null when it is not a well-formed child id. */
export function parentOfChildId(id: string): string | null {
  const at = id.lastIndexOf(CHILD_ID_INFIX);
  if (at <= 0 || !/^\d+$/.test(id.slice(at + CHILD_ID_INFIX.length))) return null;
  return id.slice(0, at);
}

export const RESERVED_CHILD_ID_RULE = `not contain "${CHILD_ID_INFIX}" (reserved for sub-agents, <parent>${CHILD_ID_INFIX}<n>)`;
