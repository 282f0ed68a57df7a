/**
 * The workflow bundle's preloaded modules (workers/workflow-bundle.ts), in the run's bundle
 * evaluated as Temporal's reusable V8 context does (bench/support/reusable-vm.ts): shared by every
 * workflow of a worker thread and deep-frozen after the preload.
 *
 * - The preload reaches only the modules audited there (a new import into a preloaded module
 *   fails here until it is audited and listed).
 * - Every schema and check workflow code uses still works frozen, and answers exactly as the same
 *   code outside the sandbox does, in the first workflow and in later ones (nothing one workflow
 *   does changes what the next one gets).
 */
import fs from 'node:fs';
import { describe, expect, inject, it } from 'vitest';
import { reusableSandbox, type ReusableSandbox } from '../../bench/support/reusable-vm';
import { PRELOADED_PACKAGES, PRELOADED_SOURCES } from '../../workers/workflow-bundle';
import { parseArgs, allIssues } from '../../core/validation';
import * as trajectoryInput from '../../core/trajectory-input';
import * as token from '../../core/capability/token';
import * as subagent from '../../core/capability/subagent';
import * as catalog from '../../core/tools/catalog';
import * as key from '../../core/key';
import * as rules from '../../core/capability/rules';

type Schema = unknown;
interface Code {
  parseArgs(schema: Schema, value: unknown, root?: string): unknown;
  allIssues(schema: Schema, value: unknown, root?: string): unknown;
  trajectoryInput: Record<string, () => Schema>;
  token: { CapabilityToken: () => Schema; ObjectSpec: () => Schema; tokenDigest(t: unknown): string };
  subagent: { spawnSubagentArgs: () => Schema };
  catalog: { CATALOG: Record<string, { args: () => Schema }>; publishedCatalog(): unknown };
  key: { deriveKey(call: unknown): string };
  rules: { checkBody(body: unknown, req: unknown): unknown };
  /** A JSON value as an object of the code's own realm (as workflow code gets its inputs). */
  local<T>(value: T): T;
}

const hostCode = {
  parseArgs,
  allIssues,
  trajectoryInput,
  token,
  subagent,
  catalog,
  key,
  rules,
  local: <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T,
} as unknown as Code;

function sandboxCode(s: ReusableSandbox): Code {
  const exportsOf = (id: string) => {
    const m = s.module(id);
    if (!m) throw new Error(`${id} not loaded`);
    return m.exports as never;
  };
  const validation = exportsOf('./core/validation.ts') as Pick<Code, 'parseArgs' | 'allIssues'>;
  return {
    parseArgs: validation.parseArgs,
    allIssues: validation.allIssues,
    trajectoryInput: exportsOf('./core/trajectory-input.ts'),
    token: exportsOf('./core/capability/token.ts'),
    subagent: exportsOf('./core/capability/subagent.ts'),
    catalog: exportsOf('./core/tools/catalog.ts'),
    key: exportsOf('./core/key.ts'),
    rules: exportsOf('./core/capability/rules.ts'),
    local: <T>(value: T): T => s.run(`JSON.parse(${JSON.stringify(JSON.stringify(value))})`) as T,
  };
}

const body = {
  v: 1,
  kid: 'k1',
  aud: 'traj-1',
  rights: ['read', 'write'],
  objects: ['path:/srv/ws', 'host:example.com:443'],
  pred: { max_cost: 10, budget: 100 },
  exp: 1_900_000_000_000,
  parent: null,
  depth: 0,
};
const capability = { body, sig: 'A'.repeat(43) };
const edit = { path: '/srv/ws/a.txt', old_str: 'a', new_str: 'b' };
const call = (over: Record<string, unknown> = {}) => ({ call_id: 'c1', tool: 'file_edit', args: edit, ...over });
const input = (over: Record<string, unknown> = {}) => ({ workspace: '/srv/ws', turns: [{ turn: 0, calls: [call()] }], ...over });
const model = { baseUrl: 'http://127.0.0.1:8000/v1', model: 'm', task: 'do it', apiKeyEnv: 'OPENAI_KEY' };
let deep: unknown = {};
for (let i = 0; i < 70; i++) deep = { d: deep };

/** What workflow code asks of the shared modules, valid and invalid cases alike; every answer as JSON text. */
function answers(code: Code): string[] {
  const t = code.trajectoryInput;
  const cases: [Schema, unknown, string?][] = [
    [t.TrajectoryInputSchema!(), input(), 'input'],
    [t.TrajectoryInputSchema!(), input({ leaseMs: 100 }), 'input'],
    [t.TrajectoryInputSchema!(), input({ levelOverrides: { file_edit: 'A0' } }), 'input'],
    [t.TrajectoryInputSchema!(), input({ levelOverrides: { bash_execute: 'A3' }, capability }), 'input'],
    [t.TrajectoryInputSchema!(), input({ capability: { ...capability, sig: 'A'.repeat(42) + 'B' } }), 'input'],
    [t.TrajectoryInputSchema!(), input({ model }), 'input'],
    [t.TrajectoryInputSchema!(), { workspace: '/srv/ws', model }, 'input'],
    [t.TrajectoryInputSchema!(), { workspace: '/srv/ws', model: { ...model, baseUrl: 'ftp://example.com' } }, 'input'],
    [t.TrajectoryInputSchema!(), { workspace: '/srv/ws', model: { ...model, apiKeyEnv: 'SETTLE_KEY_SECRET' } }, 'input'],
    [t.TrajectoryInputSchema!(), input({ carried: { reports: [], turnsDone: [0], continuedAsNew: 1 } }), 'input'],
    [t.TrajectoryRequestSchema!(), input({ carried: { reports: [], turnsDone: [], continuedAsNew: 0 } }), 'input'],
    [t.TrajectorySpecSchema!(), { trajectoryId: 'traj-2', ...input({ capability }) }, 'spec'],
    [t.TrajectorySpecSchema!(), { trajectoryId: 'a/sub-1', ...input() }, 'spec'],
    [t.ProposedCallSchema!(), call(), ''],
    [t.ProposedCallSchema!(), call({ call_id: 'c1#compensate' }), ''],
    [t.ProposedCallSchema!(), call({ args: deep }), ''],
    [t.ProposedCallSchema!(), call({ extra: 1 }), ''],
    [t.RunTurnInputSchema!(), { turn: 1, calls: [call(), call({ call_id: 'c2' })] }, ''],
    [t.RunTurnInputSchema!(), { turn: -1, calls: [] }, ''],
    [code.catalog.CATALOG.file_edit!.args(), edit],
    [code.catalog.CATALOG.file_edit!.args(), { ...edit, old_str: '' }],
    [code.catalog.CATALOG.file_view!.args(), { path: '/srv/ws/a.txt', offset: 1, limit: 501 }],
    [code.catalog.CATALOG.grep_search!.args(), { pattern: 'x', path: '/srv/ws', glob: '*.ts' }],
    [code.catalog.CATALOG.grep_search!.args(), { pattern: 'x', path: 'relative', glob: '$(x)' }],
    [code.catalog.CATALOG.bash_execute!.args(), { command: 'ls' }],
    [code.catalog.CATALOG.bash_execute!.args(), { command: 'ls', timeout_ms: 10 }],
    [code.catalog.CATALOG.http_request!.args(), { method: 'POST', url: 'https://api.example.com/v1/charges', body: '{"amount":1}' }],
    [
      code.catalog.CATALOG.http_request!.args(),
      { method: 'POST', url: 'https://a.example/x', body: '{', status_url: 'https://b.example/x' },
    ],
    [code.token.CapabilityToken(), capability],
    [code.token.ObjectSpec(), 'nope:x'],
    [
      code.subagent.spawnSubagentArgs(),
      { task: 't', rights: ['read'], objects: ['path:/srv/ws/sub'], max_cost: 1, budget: 10, expires_in_ms: 60_000 },
    ],
    [code.subagent.spawnSubagentArgs(), { task: '', rights: ['fly'], objects: [], max_cost: -1, budget: 1, expires_in_ms: 1 }],
  ];
  const out: string[] = [];
  const attempt = (f: () => unknown) => {
    try {
      out.push(JSON.stringify({ ok: f() }));
    } catch (err) {
      out.push(JSON.stringify({ error: (err as Error).message }));
    }
  };
  for (const [schema, value, root] of cases) {
    attempt(() => code.parseArgs(schema, code.local(value), root));
    attempt(() => code.allIssues(schema, code.local(value), root));
  }
  attempt(() => code.catalog.publishedCatalog());
  attempt(() =>
    code.key.deriveKey(
      code.local({ trajectoryId: 'traj-1', turn: 0, callId: 'c1', tool: 'file_edit', args: { ...edit, allow_multiple: false } }),
    ),
  );
  attempt(() => code.token.tokenDigest(code.local(capability)));
  attempt(() =>
    code.rules.checkBody(code.local(body), {
      op: 'read',
      target: { kind: 'path', path: '/srv/ws/a.txt' },
      cost: 1,
      audience: 'traj-1',
      nowMs: 1_800_000_000_000,
    }),
  );
  attempt(() =>
    code.rules.checkBody(code.local(body), {
      op: 'connect',
      target: { kind: 'host', host: 'example.com', port: 443 },
      cost: 1,
      audience: 'traj-1',
      nowMs: 1_800_000_000_000,
    }),
  );
  return out;
}

describe('the workflow bundle preload', () => {
  const bundle = fs.readFileSync(inject('workflowBundlePath'), 'utf8');

  it('reaches only the modules audited in workers/workflow-bundle.ts, and all of them', () => {
    const entryOnly = new Set(reusableSandbox(bundle, { preload: false }).sharedIds());
    const preloaded = reusableSandbox(bundle, { preload: true })
      .sharedIds()
      .filter((id) => !entryOnly.has(id));
    const packages = new Set<string>();
    const sources = new Set<string>();
    for (const id of preloaded) {
      const m = /^\.\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(id);
      if (m) packages.add(m[1]!);
      else sources.add(id.replace(/^\.\//, ''));
    }
    const auditedPackages = new Set(
      PRELOADED_PACKAGES.map((p) =>
        p
          .split('/')
          .slice(0, p.startsWith('@') ? 2 : 1)
          .join('/'),
      ),
    );
    expect([...packages].sort()).toEqual([...auditedPackages].sort());
    expect([...sources].sort()).toEqual([...PRELOADED_SOURCES].sort());
  });

  it('leaves every schema workable after the freeze, with the same answers in every workflow as outside the sandbox', () => {
    const expected = answers(hostCode);
    expect(expected.filter((a) => a.startsWith('{"error"')).length).toBeGreaterThan(10); // the invalid cases are refused
    const s = reusableSandbox(bundle, { preload: true });
    for (let workflow = 0; workflow < 3; workflow++) {
      s.nextWorkflow();
      s.run('__TEMPORAL__.importWorkflows()');
      expect(answers(sandboxCode(s))).toEqual(expected);
    }
  });
});
