/** What test/global-setup.ts provides to every test file (vitest `inject`). */
import type {} from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    databaseUrl: string;
    workflowBundlePath: string;
    uiUrl: string | null;
  }
}
