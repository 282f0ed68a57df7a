/**
 * `npm run bench:settle` — overhead of settle's settlement core, as ratios measured in one run.
 *
 * 1. Endpoint store: claim (with intent, as a settled call claims) + complete pairs per second
 *    through EndpointStore as a worker opens it (named prepared statements), against the very same
 *    two statements (captured from the store, fresh keys substituted) sent with raw `pg` unnamed,
 *    and run by pgbench on the same server (-M prepared and -M extended): the ceiling.
 * 2. Key derivation: deriveKey() per second for 1 KiB args against SHA-256 alone over the
 *    pre-serialized material.
 *
 * Postgres: DATABASE_URL, else a throw-away embedded server. Rounds alternate A/B to spread
 * machine noise over both sides; the best round of each side is reported. `npm run bench` runs
 * this with the other benchmarks and writes bench/results.json.
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { sha256 } from '@noble/hashes/sha2.js';
import { deriveKey, keyMaterial, type CallIdentity } from '../core/key';
import { EndpointStore } from '../activities/store/endpoint-store';
import type { SettleDatabase } from '../activities/store/schema';
import { startPostgres } from '../stack/postgres';
import { openDatabase } from '../activities/store/database';
import type { Figure } from './support/figures';

const POOL_SIZE = 8;
const PAIRS_PER_ROUND = 1_500;
const ROUNDS = 4;

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-'));
  fs.chmodSync(dataDir, 0o755);
  const postgres = await startPostgres({ dataDir: path.join(dataDir, 'data'), ephemeral: true });
  try {
    console.log(`settle bench · node ${process.version} · ${os.cpus().length} cores · postgres ${postgres.kind}\n`);
    for (const f of [...(await benchStore(postgres.url)), ...benchKeys()]) console.log(formatFigure(f));
  } finally {
    await postgres.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

export function formatFigure(f: Figure): string {
  const against = f.against ? `  (vs ${f.against})` : '';
  const t = f.detail?.['target'];
  const goal = typeof t === 'string' ? `  [target ${t}${f.detail?.['meetsTarget'] === false ? ': not met' : ''}]` : '';
  return `${f.group.padEnd(10)} ${f.figure.padEnd(64)} ${String(f.value).padStart(10)} ${f.unit}${goal}${against}`;
}

/**
 * The endpoint store's ceiling: claim (with intent, as a settled call claims) + complete pairs
 * per second through EndpointStore, against the very same two statements sent with raw `pg`
 * (unnamed, as Kysely would) and by pgbench on the same server (-M prepared: parse and plan once
 * per connection, as the store now does; -M extended: every time).
 */
export async function benchStore(url: string): Promise<Figure[]> {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE });
  pool.on('error', () => {});
  const captured: CompiledQuery[] = [];
  const db = new Kysely<SettleDatabase>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') captured.push(event.query);
    },
  });
  const store = new EndpointStore(db);
  const opts = {
    leaseMs: 30_000,
    holder: 'bench',
    intent: { path: '/ws/file.txt', sha256_before: 'a'.repeat(64), sha256_after: 'b'.repeat(64), matches: 1 },
  };
  let seq = 0;
  const nextCall = (prefix: string) => {
    const trajectoryId = `${prefix}-${process.pid}-${seq++}`;
    const args = { path: '/ws/file.txt', old_str: 'a', new_str: 'b' };
    return {
      key: deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args }),
      trajectoryId,
      turn: 0,
      callId: 'c',
      tool: 'file_edit',
      args,
    };
  };

  // Capture the exact statements of one claim + complete.
  const sample = nextCall('sample');
  await store.claim(sample, opts);
  await store.complete(sample.key, 1, { output: 'ok' }, 'worker:bench');
  if (captured.length !== 2) throw new Error(`expected claim+complete to be 2 statements, saw ${captured.length}`);
  const [claimSql, completeSql] = captured as [CompiledQuery, CompiledQuery];
  const substitute = (q: CompiledQuery, from: { key: string; trajectoryId: string }, to: { key: string; trajectoryId: string }) =>
    q.parameters.map((p) => (p === from.key ? to.key : p === from.trajectoryId ? to.trajectoryId : p));
  // The store as a worker opens it (named prepared statements).
  const shipped = openDatabase(url, { max: POOL_SIZE });
  const shippedStore = new EndpointStore(shipped);

  const viaStore = async () => {
    const call = nextCall('store');
    const claim = await shippedStore.claim(call, opts);
    if (claim.kind !== 'claimed') throw new Error(`unexpected ${claim.kind}`);
    const done = await shippedStore.complete(call.key, 1, { output: 'ok' }, 'worker:bench');
    if (!done.ok) throw new Error('complete refused');
  };
  const viaRawPg = async () => {
    const call = nextCall('raw');
    const claimed = await pool.query(claimSql.sql, substitute(claimSql, sample, call));
    if (claimed.rowCount !== 1) throw new Error('raw claim did not claim');
    const done = await pool.query(completeSql.sql, substitute(completeSql, sample, call));
    if (done.rowCount !== 1) throw new Error('raw complete did not complete');
  };

  const storeRates: number[] = [];
  const rawRates: number[] = [];
  await runConcurrently(viaStore, 200); // warm-up: connections, plans, JIT
  await runConcurrently(viaRawPg, 200);
  for (let round = 0; round < ROUNDS; round++) {
    storeRates.push(await pairsPerSecond(viaStore));
    rawRates.push(await pairsPerSecond(viaRawPg));
  }
  const pgbench = {
    prepared: runPgbench(url, [claimSql, completeSql], sample, 'prepared'),
    extended: runPgbench(url, [claimSql, completeSql], sample, 'extended'),
  };
  const store_ = Math.max(...storeRates);
  const raw = Math.max(...rawRates);
  await db.destroy(); // ends the shared pool
  await shipped.destroy();
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const figures: Figure[] = [
    {
      group: 'store',
      figure: 'claim(+intent)+complete pairs/s, EndpointStore, pool of 8',
      value: Math.round(store_),
      unit: 'pairs/s',
      detail: { rounds: storeRates.map(Math.round), pairsPerRound: PAIRS_PER_ROUND },
    },
    {
      group: 'store',
      figure: 'same SQL via raw pg (unnamed statements)',
      value: Math.round(raw),
      unit: 'pairs/s',
      detail: { rounds: rawRates.map(Math.round) },
    },
    { group: 'store', figure: 'EndpointStore / raw pg', value: r2(store_ / raw), unit: '×', against: 'the same two statements via raw pg' },
  ];
  for (const [mode, tps] of Object.entries(pgbench)) {
    if (tps === null) continue;
    figures.push({ group: 'store', figure: `same SQL via pgbench -M ${mode}, 8 clients`, value: Math.round(tps), unit: 'pairs/s' });
    figures.push({
      group: 'store',
      figure: `EndpointStore / pgbench -M ${mode}`,
      value: r2(store_ / tps),
      unit: '×',
      against: `pgbench -M ${mode}, same SQL, same server`,
    });
  }
  return figures;
}

/** pgbench (PostgreSQL's own load generator) running the two statements: pairs (transactions) per second, or null without pgbench. */
function runPgbench(
  url: string,
  statements: CompiledQuery[],
  sample: { key: string; trajectoryId: string },
  mode: 'prepared' | 'extended',
): number | null {
  const u = new URL(url);
  const literal = (v: unknown): string => {
    // A fresh call per transaction: keys are 64 hex digits (a CHECK constraint), from the random :n.
    if (v === sample.key) return `lpad(to_hex(CAST(:n AS bigint)), 64, '0')`;
    if (v === sample.trajectoryId) return `('pgb-' || CAST(:n AS text))`;
    if (v === null || v === undefined) return 'NULL';
    if (typeof v === 'number') return String(v);
    if (typeof v !== 'string') throw new Error(`pgbench script: unexpected parameter ${JSON.stringify(v)}`);
    const text = v.replace(/'/g, "''");
    if (!text.includes(':')) return `'${text}'`;
    // pgbench reads `:name` as a variable anywhere in the text: spell colons as chr(58); the
    // concatenation is text, so JSON values (the args column has no cast in the SQL) say jsonb.
    const spelled = `('${text.replace(/:/g, "' || chr(58) || '")}')`;
    return text.startsWith('{') || text.startsWith('[') ? `${spelled}::jsonb` : spelled;
  };
  const script =
    '\\set n random(1, 9000000000000000)\n' +
    statements
      .map((q) => q.sql.replace(/\$(\d+)/g, (_, i: string) => literal(q.parameters[Number(i) - 1])).replace(/\s+/g, ' ') + ';\n')
      .join('');
  const file = path.join(os.tmpdir(), `settle-pgbench-${process.pid}.sql`);
  fs.writeFileSync(file, script);
  const r = spawnSync(
    'pgbench',
    [
      '-n',
      '-h',
      u.hostname,
      '-p',
      u.port,
      '-U',
      decodeURIComponent(u.username),
      '-f',
      file,
      '-c',
      String(POOL_SIZE),
      '-j',
      '2',
      '-T',
      '8',
      '-M',
      mode,
      u.pathname.slice(1),
    ],
    { env: { ...process.env, PGPASSWORD: decodeURIComponent(u.password) }, encoding: 'utf8', maxBuffer: 256 * 2 ** 20 },
  );
  fs.rmSync(file, { force: true });
  if (r.error) {
    console.error(`pgbench: ${r.error.message}`);
    return null; // no pgbench on this machine
  }
  const m = /tps = ([\d.]+)/.exec(r.stdout);
  if (r.status !== 0 || !m) throw new Error(`pgbench failed (${r.status}): ${r.stderr.slice(-1000)}`);
  const failed = /number of failed transactions: (\d+)/.exec(r.stdout);
  if (failed && failed[1] !== '0') throw new Error(`pgbench: ${failed[1]} failed transactions`);
  return Number(m[1]);
}

async function pairsPerSecond(fn: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await runConcurrently(fn, PAIRS_PER_ROUND);
  return (PAIRS_PER_ROUND * 1000) / (performance.now() - start);
}

async function runConcurrently(fn: () => Promise<void>, total: number): Promise<void> {
  let remaining = total;
  await Promise.all(
    Array.from({ length: POOL_SIZE }, async () => {
      while (remaining-- > 0) await fn();
    }),
  );
}

export function benchKeys(): Figure[] {
  // About 1 KiB of realistic arguments once canonicalized.
  const args = {
    path: '/workspace/services/api/src/handlers/orders.ts',
    old_str: 'const total = items.reduce((sum, item) => sum + item.price, 0);\n'.repeat(6),
    new_str: 'const total = items.reduce((sum, item) => sum + item.price * item.quantity, 0);\n'.repeat(6),
    allow_multiple: false,
  };
  const call: CallIdentity = { trajectoryId: 'bench-trajectory', turn: 12, callId: 'call_abc123', tool: 'file_edit', args };
  const material = keyMaterial(call);
  const iterations = 20_000;
  const rates = { derive: [] as number[], hash: [] as number[] };
  for (let round = 0; round < ROUNDS + 1; round++) {
    let t = performance.now();
    for (let i = 0; i < iterations; i++) deriveKey(call);
    const derive = (iterations * 1000) / (performance.now() - t);
    t = performance.now();
    for (let i = 0; i < iterations; i++) sha256(material);
    const hash = (iterations * 1000) / (performance.now() - t);
    if (round > 0) {
      // round 0 is warm-up
      rates.derive.push(derive);
      rates.hash.push(hash);
    }
  }
  const derive = Math.max(...rates.derive);
  const hash = Math.max(...rates.hash);
  return [
    {
      group: 'keys',
      figure: `key derivations/s (validate + JCS + SHA-256), ${material.length} B of key material`,
      value: Math.round(derive),
      unit: '/s',
    },
    { group: 'keys', figure: 'SHA-256 alone over the same bytes', value: Math.round(hash), unit: '/s' },
    {
      group: 'keys',
      figure: 'deriveKey / bare SHA-256',
      value: Math.round((derive / hash) * 100) / 100,
      unit: '×',
      against: 'SHA-256 over the pre-serialized key material',
    },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
