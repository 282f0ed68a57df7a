/**
 * `npm run build`: compiles settle's runtime sources to dist/ for the packed package (`npm pack`
 * runs it as `prepack`): the JavaScript file for file as bin/compile.js writes it (the same
 * compile a checkout's `settle` runs from, in .settle/build/), and declarations beside it
 * (dist/core/key.js next to dist/core/key.d.ts), their relative specifiers rewritten the same way;
 * and settle's workflow bundle (dist/workflow-bundle.js), so workers from the package start without bundling.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { bundleWorkflowCode } from '@temporalio/worker';
import { compiledSpecifier, compileModules, runtimeSources } from '../bin/compile.js';
import { settleBundleOptions, workflowSdkVersion } from '../workers/workflow-bundle';

const quietBundler = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');

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

const sources = runtimeSources(ROOT);
fs.rmSync(DIST, { recursive: true, force: true });
await compileModules({ root: ROOT, outDir: DIST, files: sources });
buildDeclarations(sources.map((f) => path.join(ROOT, f)));
// settle's workflows, bundled once here so that a worker or a gateway from the package starts
// without bundling (workers/workflow-bundle.ts prebuiltWorkflowBundle), with the SDK version it needs.
const bundle = await bundleWorkflowCode(settleBundleOptions(quietBundler));
fs.writeFileSync(path.join(DIST, 'workflow-bundle.js'), bundle.code);
fs.writeFileSync(path.join(DIST, 'workflow-bundle.js.sdk-version'), `${workflowSdkVersion()}\n`);
// stderr: `npm pack --json` prints its report on stdout after this (prepack) script.
process.stderr.write(`settle build: ${sources.length} modules compiled to dist/\n`);
