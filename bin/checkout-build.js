// @ts-check
/**
 * In a checkout, `settle` runs a compiled copy of the sources kept in .settle/build/ (tsx's loader
 * alone costs more than the whole start-up budget of `settle key`). The copy is checked against
 * the sources at every start and never used stale:
 *
 * - .settle/build/manifest.json records, for every runtime source and for what the compile
 *   depends on (bin/compile.js, this file, tsconfig.json, package.json, esbuild's version), its
 *   modification time, change time, size and inode as they were *before* it was compiled.
 * - At start, those are read again (one readdir per folder and one stat per file, a few ms): all
 *   equal, the copy runs. Any difference (an edit, a touch, a checkout, a file added or removed),
 *   and the changed files are compiled again first — all of them when the file set or the compile
 *   itself changed — and the manifest rewritten last.
 * - One process compiles at a time (.settle/build.lock, holding its pid; a lock whose process is
 *   gone is taken over); the others wait, then check again.
 * - If the copy cannot be brought up to date (esbuild missing, a file that does not compile, no
 *   lock within a minute), the caller runs the sources through tsx and says so in one line.
 */
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { compileModules, runtimeSources } from './compile.js';

/** Files besides the runtime sources whose change makes every compiled file suspect. */
const COMPILE_INPUTS = ['bin/compile.js', 'bin/checkout-build.js', 'tsconfig.json', 'package.json', 'node_modules/esbuild/package.json'];
const LOCK_WAIT_MS = 60_000;

/** @typedef {Record<string, string>} Signatures  relative path → "mtime:ctime:size:inode" */
/** @typedef {{ entry: string } | { fallback: string }} CompiledCli */

/**
 * The compiled CLI's entry (a file URL) for the checkout at `root`, up to date with its sources;
 * or why there is none (the caller falls back to tsx).
 * @param {string} root
 * @returns {Promise<CompiledCli>}
 */
export async function compiledCli(root) {
  const outDir = path.join(root, '.settle', 'build');
  const entry = { entry: pathToFileURL(path.join(outDir, 'cli', 'main.js')).href };
  if (isFresh(root, outDir)) return entry;
  try {
    await withLock(path.join(root, '.settle', 'build.lock'), async () => {
      // Signatures first, compile second: a file edited meanwhile is recorded as older than it is, and compiled again next time.
      const current = signatures(root);
      const recorded = readManifest(outDir);
      if (recorded && sameSignatures(recorded, current)) return;
      const all = !recorded || COMPILE_INPUTS.some((f) => recorded[f] !== current[f]) || !sameKeys(recorded, current);
      const sources = Object.keys(current).filter((f) => !COMPILE_INPUTS.includes(f));
      const changed = all ? sources : sources.filter((f) => recorded[f] !== current[f]);
      // Before any output is replaced, the manifest stops vouching for what is about to change.
      if (all) fs.rmSync(outDir, { recursive: true, force: true });
      else writeManifest(outDir, Object.fromEntries(Object.entries(recorded).filter(([f]) => !changed.includes(f))));
      await compileModules({ root, outDir, files: changed });
      writeManifest(outDir, current);
    });
  } catch (err) {
    return { fallback: `the compiled copy in .settle/build could not be brought up to date: ${/** @type {Error} */ (err).message}` };
  }
  return entry;
}

/**
 * @param {string} root
 * @param {string} outDir
 */
function isFresh(root, outDir) {
  const recorded = readManifest(outDir);
  return recorded !== null && sameSignatures(recorded, signatures(root));
}

/**
 * @param {string} root
 * @returns {Signatures}
 */
function signatures(root) {
  /** @type {Signatures} */
  const out = {};
  for (const file of [...COMPILE_INPUTS, ...runtimeSources(root)]) {
    const s = fs.statSync(path.join(root, file), { throwIfNoEntry: false });
    out[file] = s ? `${s.mtimeMs}:${s.ctimeMs}:${s.size}:${s.ino}` : 'absent';
  }
  return out;
}

/**
 * @param {Signatures} a
 * @param {Signatures} b
 */
function sameKeys(a, b) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => k in b);
}

/**
 * @param {Signatures} a
 * @param {Signatures} b
 */
function sameSignatures(a, b) {
  return sameKeys(a, b) && Object.keys(a).every((k) => a[k] === b[k]);
}

/**
 * @param {string} outDir
 * @returns {Signatures | null}
 */
function readManifest(outDir) {
  try {
    return /** @type {{ inputs: Signatures }} */ (JSON.parse(fs.readFileSync(path.join(outDir, 'manifest.json'), 'utf8'))).inputs;
  } catch {
    return null;
  }
}

/**
 * @param {string} outDir
 * @param {Signatures} inputs
 */
function writeManifest(outDir, inputs) {
  const file = path.join(outDir, 'manifest.json');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(`${file}.${process.pid}.tmp`, JSON.stringify({ inputs }, null, 1) + '\n');
  fs.renameSync(`${file}.${process.pid}.tmp`, file);
}

/**
 * Runs `fn` holding the lock file (created exclusively, holding this pid).
 * @param {string} lock
 * @param {() => Promise<void>} fn
 */
async function withLock(lock, fn) {
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'EEXIST') throw err;
    }
    if (!holderAlive(lock)) {
      fs.rmSync(lock, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${lock} is held by another settle for over ${LOCK_WAIT_MS / 1000} s`);
    await sleep(50);
  }
  try {
    await fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/** @param {string} lock */
function holderAlive(lock) {
  let pid;
  try {
    pid = Number(fs.readFileSync(lock, 'utf8'));
  } catch {
    return true; // gone meanwhile: try to create it again
  }
  if (!Number.isInteger(pid) || pid <= 0) {
    // Created but its pid not written yet, or its holder died in between: give it a few seconds.
    const made = fs.statSync(lock, { throwIfNoEntry: false });
    return made !== undefined && Date.now() - made.mtimeMs < 5_000;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === 'EPERM';
  }
}
