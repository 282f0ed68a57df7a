#!/usr/bin/env node
// The `settle` command: compiled JavaScript in both places it runs. The packed package ships
// dist/ (`npm run build`, no sources, no tsx). A checkout runs the copy in .settle/build/, which
// bin/checkout-build.js brings up to date with the sources first (never stale); if it cannot,
// the sources run through tsx, said in one line on stderr.
import fs from 'node:fs';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const source = new URL('../cli/main.ts', import.meta.url);
if (fs.existsSync(source)) {
  const { compiledCli } = await import('./checkout-build.js');
  const compiled = await compiledCli(fileURLToPath(new URL('..', import.meta.url)));
  if ('entry' in compiled) {
    await import(compiled.entry);
  } else {
    process.stderr.write(`settle: running the TypeScript sources through tsx (slower start): ${compiled.fallback}\n`);
    const { register } = await import('tsx/esm/api');
    register();
    await import(source.href);
  }
} else {
  await import('../dist/cli/main.js');
}
