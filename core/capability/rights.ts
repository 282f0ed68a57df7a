/** The rights a capability can grant: apart from the token schemas, so that `settle --help` can list them without loading zod. */
export const RIGHTS = ['read', 'write', 'exec', 'connect'] as const;
export type Right = (typeof RIGHTS)[number];
