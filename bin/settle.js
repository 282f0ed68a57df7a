#!/usr/bin/env node
// The `settle` command. TypeScript sources run through tsx's loader: no build step after `npm ci`.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
