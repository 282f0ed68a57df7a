/** The `settle` command as a user runs it: output, exit codes, one-line errors. */
import { afterAll, describe, expect, it, inject } from 'vitest';
import { deriveKey } from '../../core/key';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { runSettle as settle, SETTLE_BIN } from '../support/cli';
import { openTestDb, testStore, uniqueId } from '../support/env';
import { openDatabase } from '../../activities/store/database';

const db = openTestDb(2);
const store = testStore(db);
afterAll(() => db.destroy());

/**
 * Runs settle with each argument given as a printf %b format, so an argument can carry bytes that
 * are not UTF-8 (spawn encodes every string argument as UTF-8). Straight from a shell, as
 * `settle …` is typed, or through `npx settle …`, whose npm decodes the arguments first.
 */
function settleWithBytes(args: string[], via: 'shell' | 'npx' = 'shell'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const command = via === 'npx' ? 'npx settle' : '"$NODE" "$SETTLE"';
  const script = `exec ${command} ${args.map((_, i) => `"$(printf '%b' "\${${i + 1}}")"`).join(' ')}`;
  // A shell's environment has none of the variables npm sets for what it starts (this test run's own).
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script, 'settle', ...args], {
      env: { ...env, NODE: process.execPath, SETTLE: SETTLE_BIN },
      cwd: path.dirname(path.dirname(SETTLE_BIN)),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

describe('settle key', () => {
  const argv = ['key', '--trajectory', 't-1', '--turn', '2', '--call-id', 'call_9', '--tool', 'file_edit', '--args'];

  it('prints the key of exactly those args, with no defaults applied', async () => {
    const r = await settle([...argv, '{"path":"/ws/a","old_str":"x","new_str":"y"}']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      deriveKey({
        trajectoryId: 't-1',
        turn: 2,
        callId: 'call_9',
        tool: 'file_edit',
        args: { path: '/ws/a', old_str: 'x', new_str: 'y' },
      }) + '\n',
    );
  });

  it('takes the keyed-mode secret only from the named environment variable', async () => {
    const withSecret = await settle([...argv, '{}', '--secret-env', 'MY_KEY'], { env: { MY_KEY: 's3cret' } });
    expect(withSecret.code).toBe(0);
    expect(withSecret.stdout.trim()).toBe(
      deriveKey({ trajectoryId: 't-1', turn: 2, callId: 'call_9', tool: 'file_edit', args: {} }, new TextEncoder().encode('s3cret')),
    );
    const missing = await settle([...argv, '{}', '--secret-env', 'NOT_SET_ANYWHERE'], { env: { NOT_SET_ANYWHERE: '' } });
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe('settle: --secret-env: environment variable NOT_SET_ANYWHERE must be set and non-empty');
  });

  it.each([
    [['--turn', '-1'], /--turn.*must be an integer ≥ 0/],
    [['--tool', 'Bad Tool'], /--tool must match/],
    [['--args', '[1]'], /--args must be a JSON object \(got array\)/],
    [['--args', '{"a":'], /--args must be valid JSON \(unexpected end of the text/],
    [['--args', '{"a":1,"a":2}'], /^settle: --args \(args\.a\) must occur only once in its object \(member name "a" repeated/],
    [
      ['--args', '{"id":9007199254740993}'],
      /^settle: --args \(args\.id\) must round-trip exactly .*9007199254740993 would be read as 9007199254740992/,
    ],
    [['--args', '{"x":1e-400}'], /^settle: --args \(args\.x\) must be representable as an IEEE 754 double \(1e-400 underflows to 0\)/],
    [['--args', '{"s":"\\ud800"}'], /--args \(args\.s\) must contain no lone surrogate/],
    [['--call-id', ''], /--call-id must be non-empty/],
  ])('invalid input %j exits 2 with one line naming the argument', async (override, message) => {
    const values: Record<string, string> = { '--trajectory': 't', '--turn': '0', '--call-id': 'c', '--tool': 'file_edit', '--args': '{}' };
    values[override[0]!] = override[1]!;
    const r = await settle(['key', ...Object.entries(values).flat()]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });

  it('refuses 5,000 levels of nesting with exit 2 and one line, not a stack overflow', async () => {
    const r = await settle([
      'key',
      '--trajectory',
      't',
      '--turn',
      '0',
      '--call-id',
      'c',
      '--tool',
      'file_edit',
      '--args',
      `{"a":${'['.repeat(5000)}`,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/^settle: --args \(args\.a(\[0\]){63}\) must nest arrays and objects at most 64 levels deep$/);
  });

  it('a missing required option exits 2', async () => {
    const r = await settle(['key', '--trajectory', 't']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option/);
    const neither = await settle(argv.slice(0, -1));
    expect(neither.code).toBe(2);
    expect(neither.stderr.trim()).toBe('settle: --args or --args-file: give exactly one of them');
  });

  it('gives no key for command-line bytes that are not UTF-8 (Node would read each as U+FFFD), naming the first bad byte', async () => {
    const pathArgs = (byte: string) => `{"path":"caf${byte}.txt"}`;
    for (const byte of ['\\xe9', '\\xe8']) {
      const r = await settleWithBytes([...argv, pathArgs(byte)]);
      expect(r).toMatchObject({ code: 2, stdout: '' });
      expect(r.stderr.trim()).toBe(
        `settle: --args must be valid UTF-8 (truncated character at byte offset 12: 0x${byte.slice(2)} starts a 3-byte sequence, then 0x2e)`,
      );
    }
    for (const byte of ['\\xff', '\\xfe']) {
      const r = await settleWithBytes([...argv, pathArgs(byte)]);
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe(`settle: --args must be valid UTF-8 (invalid byte 0x${byte.slice(2)} at byte offset 12)`);
    }
    const inline = await settleWithBytes([...argv.slice(0, -1), `--args={"p":"\\xe9"}`]);
    expect(inline.stderr.trim()).toMatch(/^settle: --args must be valid UTF-8 \(truncated character at byte offset 6:/);
    const badId = await settleWithBytes([
      'key',
      '--trajectory',
      't\\xe9',
      '--turn',
      '0',
      '--call-id',
      'c',
      '--tool',
      'file_edit',
      '--args',
      '{}',
    ]);
    expect(badId.code).toBe(2);
    expect(badId.stderr.trim()).toBe(
      'settle: --trajectory must be valid UTF-8 (truncated character at byte offset 1: 0xe9 starts a 3-byte sequence, then the text ends)',
    );
    // A real U+FFFD (EF BF BD) is text like any other: it gets its own key.
    const replacement = await settleWithBytes([...argv, pathArgs('\\xef\\xbf\\xbd')]);
    expect(replacement.code).toBe(0);
    expect(replacement.stdout.trim()).toBe(
      deriveKey({ trajectoryId: 't-1', turn: 2, callId: 'call_9', tool: 'file_edit', args: { path: 'caf\ufffd.txt' } }),
    );
  });

  it('through npx, whose npm turns bytes that are not UTF-8 into U+FFFD first: no key for any U+FFFD, pointing to --args-file', async () => {
    const refusal =
      'settle: --args: contains U+FFFD, and a package runner started settle (npm_execpath is set), which writes U+FFFD for bytes that are not UTF-8 before settle sees them; give the arguments in a file (settle key --args-file FILE)';
    for (const text of ['{"path":"caf\\xe9.txt"}', '{"path":"caf\\xef\\xbf\\xbd.txt"}']) {
      const r = await settleWithBytes([...argv, text], 'npx');
      expect(r).toMatchObject({ code: 2, stdout: '' });
      expect(r.stderr.trim().split('\n').at(-1)).toBe(refusal);
    }
    // Text without U+FFFD loses nothing on the way: its key, as from a shell.
    const plain = await settleWithBytes([...argv, '{"path":"caf\\xc3\\xa9.txt"}'], 'npx');
    expect(plain).toMatchObject({ code: 0 });
    expect(plain.stdout.trim()).toBe(
      deriveKey({ trajectoryId: 't-1', turn: 2, callId: 'call_9', tool: 'file_edit', args: { path: 'café.txt' } }),
    );
  });

  it('reads --args-file FILE or - as bytes: arguments above the 128 KiB limit of one command-line argument', async () => {
    const args = { path: '/ws/big', content: 'x'.repeat(300 * 1024) };
    const expected = deriveKey({ trajectoryId: 't-1', turn: 2, callId: 'call_9', tool: 'file_edit', args }) + '\n';
    const file = path.join(os.tmpdir(), `settle-args-${process.pid}.json`);
    fs.writeFileSync(file, JSON.stringify(args));
    try {
      expect(await settle([...argv.slice(0, -1), '--args-file', file])).toMatchObject({ code: 0, stdout: expected });
      expect(await settle([...argv.slice(0, -1), '--args-file', '-'], { input: JSON.stringify(args) })).toMatchObject({
        code: 0,
        stdout: expected,
      });
      fs.writeFileSync(file, Buffer.from([...Buffer.from('{"path":"caf'), 0xe9, ...Buffer.from('.txt"}')]));
      const latin1 = await settle([...argv.slice(0, -1), '--args-file', file]);
      expect(latin1.code).toBe(2);
      expect(latin1.stderr.trim()).toBe(
        'settle: --args-file must be valid UTF-8 (truncated character at byte offset 12: 0xe9 starts a 3-byte sequence, then 0x2e)',
      );
      const both = await settle([...argv, '{}', '--args-file', file]);
      expect(both.code).toBe(2);
      expect(both.stderr.trim()).toBe('settle: --args or --args-file: give exactly one of them');
      const missing = await settle([...argv.slice(0, -1), '--args-file', `${file}.missing`]);
      expect(missing.code).toBe(2);
      expect(missing.stderr.trim()).toMatch(/^settle: --args-file: cannot read .*\.missing \(ENOENT/);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it('follows the byte rules of canonicalize: a leading byte order mark is dropped, as there', async () => {
    const plain = await settle([...argv, '{"a":1}']);
    expect(plain.code).toBe(0);
    expect(await settle([...argv, '\ufeff{"a":1}'])).toMatchObject({ code: 0, stdout: plain.stdout });
    expect(await settle([...argv.slice(0, -1), '--args-file', '-'], { input: '\ufeff{"a":1}' })).toMatchObject({
      code: 0,
      stdout: plain.stdout,
    });
    expect((await settle(['canonicalize'], { input: '\ufeff{"a":1}' })).stdout).toBe('{"a":1}\n');
  });

  it('accepts any notation of a number a double holds exactly as RFC 8785 prints it, and refuses text it would round', async () => {
    const key = async (n: string) => (await settle([...argv, `{"n":${n}}`])).stdout.trim();
    const big = await key('100000000000000000000');
    expect(big).toMatch(/^[0-9a-f]{64}$/);
    expect(await key('1e20')).toBe(big);
    expect(await key('9007199254740992')).toBe(await key('9007199254740992.0'));
    const rounded = await settle([...argv, '{"n":333333333.33333329}']);
    expect(rounded.code).toBe(2);
    expect(rounded.stderr.trim()).toMatch(/^settle: --args \(args\.n\) must round-trip exactly .* would be read as 333333333\.3333333;/);
  });
});

describe('settle tools', () => {
  it('prints the catalog exactly as published', async () => {
    const { publishedCatalog } = await import('../../core/tools/catalog');
    const r = await settle(['tools', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(publishedCatalog());
    const text = await settle(['tools']);
    expect(text.stdout).toMatch(/^bash_execute\s+A2\s+\(command: string, timeout_ms\?: integer\)/m);
    expect(text.stdout).toMatch(/^file_view\s+A0/m);
  });
});

describe('settle canonicalize', () => {
  it('writes the RFC 8785 form and one newline', async () => {
    const r = await settle(['canonicalize'], { input: '{ "b": [1.0, 2e3, "\\u00e9"], "a": {"z": null, "y": true} }' });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('{"a":{"y":true,"z":null},"b":[1,2000,"é"]}\n');
  });

  it('refuses what would silently change the value: repeated members, rounded numbers, invalid UTF-8, deep nesting (exit 2)', async () => {
    const cases: [string | Buffer, RegExp][] = [
      ['{"a":1,"a":2}', /^settle: stdin\.a must occur only once in its object/],
      ['[9007199254740993]', /^settle: stdin\[0\] must round-trip exactly/],
      ['[1e-400]', /^settle: stdin\[0\] must be representable as an IEEE 754 double \(1e-400 underflows to 0\)/],
      [Buffer.from([0x22, 0x61, 0xff, 0x22]), /^settle: stdin must be valid UTF-8 \(invalid byte 0xff at byte offset 2\)$/],
      // A character cut short is reported at its first byte (0xc3), not at the byte after it.
      [
        Buffer.from([0x22, 0x61, 0xc3, 0x22]),
        /^settle: stdin must be valid UTF-8 \(truncated character at byte offset 2: 0xc3 starts a 2-byte sequence, then 0x22\)$/,
      ],
      ['['.repeat(2000) + ']'.repeat(2000), /^settle: stdin(\[0\]){64} must nest arrays and objects at most 64 levels deep$/],
    ];
    for (const [input, message] of cases) {
      const r = await settle(['canonicalize'], { input });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(message);
    }
    // 64 levels are fine, and a byte order mark is dropped.
    expect((await settle(['canonicalize'], { input: '\ufeff' + '['.repeat(64) + ']'.repeat(64) })).stdout).toBe(
      '['.repeat(64) + ']'.repeat(64) + '\n',
    );
  });

  it('rejects invalid JSON and lone surrogates with exit 2', async () => {
    expect(await settle(['canonicalize'], { input: '{nope' })).toMatchObject({ code: 2 });
    const r = await settle(['canonicalize'], { input: '["\\udc00"]' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/^settle: stdin\[0\] must contain no lone surrogate/);
  });
});

describe('settle records / show', () => {
  it('lists records by state and trajectory, and shows a record with its events', async () => {
    const trajectoryId = uniqueId('cli');
    const args = { path: '/ws/a', old_str: 'a', new_str: 'b' };
    const key = deriveKey({ trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args });
    await store.claim({ key, trajectoryId, turn: 0, callId: 'c', tool: 'file_edit', args }, { leaseMs: 60_000, holder: 'cli-test' });
    await store.markInDoubt(key, 1, 'worker crashed', 'worker:cli-test');
    const env = { DATABASE_URL: inject('databaseUrl') };

    const list = await settle(['records', '--state', 'IN_DOUBT', '--trajectory', trajectoryId, '--json'], { env });
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject([{ key, state: 'IN_DOUBT', generation: 1 }]);
    const table = await settle(['records', '--trajectory', trajectoryId], { env });
    expect(table.stdout).toContain(key.slice(0, 16));

    const show = await settle(['show', key], { env });
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/state\s+IN_DOUBT/);
    expect(show.stdout).toMatch(/UNSEEN → IN_FLIGHT\s+by worker:cli-test/);
    expect(show.stdout).toMatch(/IN_FLIGHT → IN_DOUBT\s+by worker:cli-test/);
  });

  it('lists the longest-standing first with its age, a lapsed lease aged from its expiry', async () => {
    const trajectoryId = uniqueId('cli-age');
    const record = async (callId: string) => {
      const args = { path: `/ws/${callId}`, old_str: 'a', new_str: 'b' };
      const key = deriveKey({ trajectoryId, turn: 0, callId, tool: 'file_edit', args });
      await store.claim({ key, trajectoryId, turn: 0, callId, tool: 'file_edit', args }, { leaseMs: 60_000, holder: 'cli-test' });
      return key;
    };
    const [doubt, lapsed, live] = [await record('doubt'), await record('lapsed'), await record('live')];
    await store.markInDoubt(doubt, 1, 'worker crashed', 'worker:cli-test');
    await sql`UPDATE settle_endpoint_records SET updated_at = now() - interval '2 hours' WHERE key = ${doubt}`.execute(db);
    // Its holder's last renewal 3 h ago, its lease lapsed then: nothing swept it (no worker runs).
    await sql`UPDATE settle_endpoint_records SET updated_at = now() - interval '3 hours', lease_until = now() - interval '3 hours' WHERE key = ${lapsed}`.execute(
      db,
    );
    try {
      const table = await settle(['records', '--trajectory', trajectoryId], { env: { DATABASE_URL: inject('databaseUrl') } });
      expect(table.code).toBe(0);
      const lines = table.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^key +state +gen +age +trajectory \/ turn \/ call +tool +since$/);
      expect(lines.slice(1).map((l) => l.slice(0, 16))).toEqual([lapsed, doubt, live].map((k) => k.slice(0, 16)));
      expect(lines[1]).toMatch(/IN_FLIGHT \(lease lapsed\) +1 +(3h00m|3h01m) /);
      expect(lines[2]).toMatch(/IN_DOUBT +1 +(2h00m|2h01m) /);
      expect(lines[3]).toMatch(/IN_FLIGHT +1 +\d+s /);
    } finally {
      // Hours-old records would be the installation's oldest for every later test that reads the
      // age gauges on this shared database (a running worker's sweeper turns the lapsed one IN_DOUBT).
      await sql`DELETE FROM settle_endpoint_events WHERE key IN (${doubt}, ${lapsed}, ${live})`.execute(db);
      await sql`DELETE FROM settle_endpoint_records WHERE key IN (${doubt}, ${lapsed}, ${live})`.execute(db);
    }
  });

  it('rejects a bad state, a malformed key, an unknown key, and a missing database with exit 2', async () => {
    const env = { DATABASE_URL: inject('databaseUrl') };
    expect(await settle(['records', '--state', 'DONE'], { env })).toMatchObject({ code: 2 });
    expect((await settle(['show', 'abc'], { env })).stderr.trim()).toBe(
      'settle: KEY argument: must be the 64 lowercase hex digits of a key, or a unique prefix of at least 8 (got "abc")',
    );
    expect((await settle(['show', 'f'.repeat(64)], { env })).stderr).toMatch(
      /^settle: KEY argument f{64}: must name an endpoint record; none has this key\n$/,
    );
    const noDb = await settle(['records'], { env: { DATABASE_URL: '' } });
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toMatch(/DATABASE_URL: must be set/);
  });
});

describe('settle migrate', () => {
  const admin = openDatabase(inject('adminDatabaseUrl'), { max: 1 });
  afterAll(() => admin.destroy());

  /** A new, empty database on the test server, owned by settle's role (as an operator would create one). */
  async function freshDatabaseUrl(): Promise<{ url: string; name: string }> {
    const name = uniqueId('fresh').replace(/-/g, '_');
    const url = new URL(inject('databaseUrl'));
    await sql.raw(`CREATE DATABASE ${name} OWNER "${decodeURIComponent(url.username)}"`).execute(admin);
    url.pathname = `/${name}`;
    return { url: url.toString(), name };
  }

  it('a command that needs tables says to run settle migrate on an unmigrated database; settle migrate creates them', async () => {
    const { url, name } = await freshDatabaseUrl();
    const env = { DATABASE_URL: url };
    const before = await settle(['records'], { env });
    expect(before.code).toBe(2);
    expect(before.stderr.trim().split('\n')).toHaveLength(1);
    expect(before.stderr).toMatch(/has no settle tables yet: run `settle migrate`/);
    expect(before.stderr).not.toMatch(/relation .* does not exist/);

    const migrated = await settle(['migrate'], { env });
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/^settle migrate: applied 0001_endpoint_records, /);
    expect((await settle(['records'], { env })).stdout.trim()).toBe('no records');
    expect((await settle(['migrate'], { env })).stdout).toMatch(/^settle migrate: schema up to date/);
    await sql.raw(`DROP DATABASE ${name}`).execute(admin);
  });
});

describe('settle output into a closed pipe', () => {
  it('stops quietly with exit 0 when the reader has gone (| head), without a stack trace', async () => {
    const child = spawn(process.execPath, [SETTLE_BIN, 'tools', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader leaves before the command writes
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
