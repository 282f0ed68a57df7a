/** What test/global-setup.ts provides to every test file (vitest `inject`). */
import type {} from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    databaseUrl: string;
    /** The same server as its superuser (for tests that create databases); databaseUrl on an external lane. */
    adminDatabaseUrl: string;
    workflowBundlePath: string;
    uiUrl: string | null;
  }
}
