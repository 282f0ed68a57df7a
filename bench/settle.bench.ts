/**
 * `npm run bench:settle` — overhead of settle's settlement core, as ratios measured in one run.
 *
 * 1. Endpoint store: claim+complete pairs per second through EndpointStore (Kysely) against the
 *    very same two SQL statements (captured from the store, fresh keys substituted) sent with raw
 *    `pg` on the same pool. Target ≥ 0.8×.
 * 2. Key derivation: deriveKey() per second for 1 KiB args against SHA-256 alone over the
 *    pre-serialized material. Target ≥ 0.5×.
 *
 * Postgres: DATABASE_URL, else a throw-away embedded server. Rounds alternate A/B to spread
 * machine noise over both sides; the best round of each side is reported.
 */
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { sha256 } from '@noble/hashes/sha2.js';
import { deriveKey, keyMaterial, type CallIdentity } from '../core/key';
import { EndpointStore } from '../activities/store/endpoint-store';
import type { SettleDatabase } from '../activities/store/schema';
import { startPostgres } from '../stack/postgres';

const POOL_SIZE = 8;
const PAIRS_PER_ROUND = 1_500;
const ROUNDS = 4;

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-bench-'));
  fs.chmodSync(dataDir, 0o755);
  const postgres = await startPostgres({ dataDir: path.join(dataDir, 'data'), ephemeral: true });
  try {
    console.log(`settle bench · node ${process.version} · ${os.cpus().length} cores · postgres ${postgres.kind}\n`);
    await benchStore(postgres.url);
    benchKeys();
  } finally {
    await postgres.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function benchStore(url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE });
  const captured: CompiledQuery[] = [];
  const db = new Kysely<SettleDatabase>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') captured.push(event.query);
    },
  });
  const store = new EndpointStore(db);
  const opts = { leaseMs: 30_000, holder: 'bench' };
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
  const quietDb = new Kysely<SettleDatabase>({ dialect: new PostgresDialect({ pool }) });
  const quietStore = new EndpointStore(quietDb);

  const viaStore = async () => {
    const call = nextCall('store');
    const claim = await quietStore.claim(call, opts);
    if (claim.kind !== 'claimed') throw new Error(`unexpected ${claim.kind}`);
    const done = await quietStore.complete(call.key, 1, { output: 'ok' }, 'worker:bench');
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
  const store_ = Math.max(...storeRates);
  const raw = Math.max(...rawRates);
  console.log(
    'endpoint store: claim+complete pairs per second (pool of ' + POOL_SIZE + ', best of ' + ROUNDS + ' rounds of ' + PAIRS_PER_ROUND + ')',
  );
  console.log(
    `  EndpointStore (Kysely)      ${store_.toFixed(0).padStart(8)} pairs/s   rounds: ${storeRates.map((r) => r.toFixed(0)).join(', ')}`,
  );
  console.log(
    `  same SQL via raw pg         ${raw.toFixed(0).padStart(8)} pairs/s   rounds: ${rawRates.map((r) => r.toFixed(0)).join(', ')}`,
  );
  console.log(`  ratio                       ${(store_ / raw).toFixed(2)}×  (target ≥ 0.80×)\n`);

  await db.destroy(); // ends the shared pool
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

function benchKeys(): void {
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
  console.log(`key derivation: per second, args of ${material.length} bytes of key material (best of ${ROUNDS} rounds of ${iterations})`);
  console.log(`  deriveKey (validate + JCS + SHA-256)  ${derive.toFixed(0).padStart(8)}/s`);
  console.log(`  SHA-256 alone over the same bytes     ${hash.toFixed(0).padStart(8)}/s`);
  console.log(`  ratio                                 ${(derive / hash).toFixed(2)}×  (target ≥ 0.50×)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
