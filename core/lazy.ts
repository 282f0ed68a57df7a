/**
 * A value built on first use, then kept. For zod schemas that workflow code imports: the workflow
 * sandbox evaluates every module of the bundle once per trajectory, so a schema built at module
 * load costs every trajectory, used or not; built lazily, a trajectory pays only for the tools it
 * calls (and each cached workflow holds only those).
 */
export function lazy<T>(build: () => T): () => T {
  let value: T | undefined;
  let built = false;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value as T;
  };
}
