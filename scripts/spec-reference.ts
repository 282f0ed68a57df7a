/** `npm run docs:spec`: writes the generated field reference into docs/spec.md, between its markers. */
import fs from 'node:fs';
import { replaceSpecReference } from '../core/spec-reference';

const file = new URL('../docs/spec.md', import.meta.url);
fs.writeFileSync(file, replaceSpecReference(fs.readFileSync(file, 'utf8')));
