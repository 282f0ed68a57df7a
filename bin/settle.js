#!/usr/bin/env node
// The `settle` command. In a checkout the TypeScript sources run through tsx's loader (no build
// step after `npm ci`, never a stale build); the packed package ships no sources and runs its
// compiled dist/ (`npm run build`), without tsx.
import fs from 'node:fs';
import { URL } from 'node:url';

const source = new URL('../cli/main.ts', import.meta.url);
if (fs.existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
