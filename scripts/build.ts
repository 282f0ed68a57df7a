/**
 * `npm run build`: compiles settle's runtime sources to dist/ for the packed package (`npm pack`
 * runs it as `prepack`). The repository itself runs the TypeScript sources through tsx.
 *
 * The layout is kept file for file (dist/core/key.js next to dist/core/key.d.ts), so that the
 * worker hands Temporal's bundler dist/workflows/index.js with the same module graph, and the
 * preloaded modules (workers/workflow-bundle.ts) stay separate modules of that graph.
 *
 * Sources import each other without extensions (`moduleResolution: Bundler`); Node's ESM loader
 * and a consumer's TypeScript under `node16`/`nodenext` need the full file name, so every
 * relative specifier is rewritten to the compiled file it resolves to: `./key` → `./key.js`,
 * `./tools` → `./tools/index.js`. Packages stay imports (`packages: 'external'`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
/** The folders whose code runs in a consumer's processes (not tests, benchmarks, chaos, scripts). */
const RUNTIME_DIRS = ['api', 'core', 'workflows', 'activities', 'workers', 'migrations', 'stack', 'cli', 'client'];

function runtimeSources(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(full);
    }
  };
  for (const dir of RUNTIME_DIRS) walk(path.join(ROOT, dir));
  return files.sort();
}

/** The compiled form of a relative specifier written in `fromDir` (a source folder), or null when it names no source file. */
function compiledSpecifier(specifier: string, fromDir: string): string | null {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return null;
  const target = path.resolve(fromDir, specifier);
  if (fs.existsSync(`${target}.ts`)) return `${specifier}.js`;
  if (fs.existsSync(path.join(target, 'index.ts'))) return `${specifier.replace(/\/$/, '')}/index.js`;
  return null;
}

async function buildJavaScript(entryPoints: string[]): Promise<void> {
  await esbuild.build({
    entryPoints,
    outdir: DIST,
    outbase: ROOT,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    plugins: [
      {
        name: 'relative-imports-stay-imports',
        setup(build) {
          build.onResolve({ filter: /^\.\.?\// }, (args) => {
            const rewritten = compiledSpecifier(args.path, args.resolveDir);
            if (rewritten === null) return { errors: [{ text: `${args.path}: no source file ${args.path}.ts or ${args.path}/index.ts` }] };
            return { path: rewritten, external: true };
          });
        },
      },
    ],
  });
}

/** Module specifiers in a declaration file: import/export declarations and `import("…")` types. */
function specifierLiterals(file: ts.SourceFile): ts.StringLiteral[] {
  const found: ts.StringLiteral[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function rewriteDeclaration(dtsFile: string, text: string): string {
  const sourceDir = path.join(ROOT, path.relative(DIST, path.dirname(dtsFile)));
  const file = ts.createSourceFile(dtsFile, text, ts.ScriptTarget.ES2022, true);
  let out = text;
  for (const literal of specifierLiterals(file).reverse()) {
    const rewritten = compiledSpecifier(literal.text, sourceDir);
    if (rewritten === null) continue;
    out = `${out.slice(0, literal.getStart(file))}'${rewritten}'${out.slice(literal.getEnd())}`;
  }
  return out;
}

function buildDeclarations(rootNames: string[]): void {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json: cannot be read');
  const options: ts.CompilerOptions = {
    ...config.options,
    noEmit: false,
    declaration: true,
    emitDeclarationOnly: true,
    rootDir: ROOT,
    outDir: DIST,
  };
  const program = ts.createProgram({ rootNames, options });
  const errors = ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
    throw new Error(`type errors, no declarations written:\n${ts.formatDiagnostics(errors, host)}`);
  }
  const result = program.emit(undefined, (fileName, text) => {
    fs.mkdirSync(path.dirname(fileName), { recursive: true });
    fs.writeFileSync(fileName, rewriteDeclaration(fileName, text));
  });
  if (result.emitSkipped) throw new Error('declaration emit skipped');
}

const sources = runtimeSources();
fs.rmSync(DIST, { recursive: true, force: true });
await buildJavaScript(sources);
buildDeclarations(sources);
// stderr: `npm pack --json` prints its report on stdout after this (prepack) script.
process.stderr.write(`settle build: ${sources.length} modules compiled to dist/\n`);
