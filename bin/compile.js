// @ts-check
/**
 * settle's runtime sources compiled to JavaScript, file for file (dist/core/key.js for
 * core/key.ts): shared by `npm run build` (dist/, the packed package) and by the compiled copy
 * a checkout runs its CLI from (bin/checkout-build.js, in .settle/build/). Plain JavaScript, so
 * that the `settle` command can compile without tsx; esbuild is imported only when compiling.
 *
 * The layout is kept file for file so that the worker hands Temporal's bundler
 * workflows/index.js with the same module graph, and the preloaded modules
 * (workers/workflow-bundle.ts) stay separate modules of that graph.
 *
 * Sources import each other without extensions (`moduleResolution: Bundler`); Node's ESM loader
 * and a consumer's TypeScript under `node16`/`nodenext` need the full file name, so every
 * relative specifier is rewritten to the compiled file it resolves to: `./key` → `./key.js`,
 * `./tools` → `./tools/index.js`. Packages stay imports (`packages: 'external'`).
 */
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';

/** The folders whose code runs in a consumer's processes (not tests, benchmarks, chaos, scripts). */
export const RUNTIME_DIRS = ['api', 'core', 'workflows', 'activities', 'workers', 'migrations', 'stack', 'cli', 'client', 'workbench'];

/**
 * Every runtime source under `root`, as paths relative to it, sorted.
 * @param {string} root
 * @returns {string[]}
 */
export function runtimeSources(root) {
  /** @type {string[]} */
  const files = [];
  /** @param {string} dir */
  const walk = (dir) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const relative = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(relative);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(relative);
    }
  };
  for (const dir of RUNTIME_DIRS) walk(dir);
  return files.sort();
}

/**
 * The compiled form of a relative specifier written in `fromDir` (a source folder), or null when it names no source file.
 * @param {string} specifier
 * @param {string} fromDir
 * @returns {string | null}
 */
export function compiledSpecifier(specifier, fromDir) {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return null;
  const target = path.resolve(fromDir, specifier);
  if (fs.existsSync(`${target}.ts`)) return `${specifier}.js`;
  if (fs.existsSync(path.join(target, 'index.ts'))) return `${specifier.replace(/\/$/, '')}/index.js`;
  return null;
}

/**
 * Compiles `files` (relative to `root`) into `outDir`, keeping their folders. Each output file is
 * written whole under a temporary name and renamed into place, so a process starting meanwhile
 * never reads half a module. Throws with the first error (file, line, message) if any file does not compile.
 * @param {{ root: string, outDir: string, files: string[] }} options
 * @returns {Promise<void>}
 */
export async function compileModules({ root, outDir, files }) {
  const esbuild = await import('esbuild');
  const result = await esbuild
    .build({
      entryPoints: files.map((f) => path.join(root, f)),
      outdir: outDir,
      outbase: root,
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'silent',
      write: false,
      plugins: [
        {
          name: 'relative-imports-stay-imports',
          setup(build) {
            build.onResolve({ filter: /^\.\.?\// }, (args) => {
              const rewritten = compiledSpecifier(args.path, args.resolveDir);
              if (rewritten === null)
                return { errors: [{ text: `${args.path}: no source file ${args.path}.ts or ${args.path}/index.ts` }] };
              return { path: rewritten, external: true };
            });
          },
        },
      ],
    })
    .catch((/** @type {{ errors?: import('esbuild').Message[] }} */ err) => {
      const first = err.errors?.[0];
      if (!first) throw err;
      const where = first.location ? `${first.location.file}:${first.location.line}:${first.location.column}: ` : '';
      throw new Error(`${where}${first.text}`);
    });
  for (const output of result.outputFiles) {
    fs.mkdirSync(path.dirname(output.path), { recursive: true });
    const temporary = `${output.path}.${process.pid}.tmp`;
    fs.writeFileSync(temporary, output.contents);
    fs.renameSync(temporary, output.path);
  }
}
