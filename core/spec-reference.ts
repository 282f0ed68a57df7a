/**
 * The field reference of a trajectory spec (docs/spec.md), generated from the zod schemas the
 * runtime validates with: types, requiredness and limits come from the schema's JSON Schema, the
 * prose from DESCRIPTIONS. Every field the schema has must be described here and nothing else,
 * so the reference cannot drift from the code (test/docs/spec.test.ts).
 */
import { z } from 'zod';
import { spawnSubagentArgs } from './capability/subagent';
import { TrajectorySpecSchema } from './trajectory-input';

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  description?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  pattern?: string;
};

/** Fields of a spec, by path (`a.b`, `a[].b`, `a.*` for a map's values). */
export const SPEC_DESCRIPTIONS: Record<string, string> = {
  trajectoryId: 'Workflow id of the trajectory; part of every key. The capability must be issued to it.',
  workspace: "Absolute path of the trajectory's workspace: an existing directory inside the worker's `SETTLE_WORKSPACE_ROOT`.",
  turns: 'Scripted driver: run these turns in order, then complete. Not with `model`.',
  'turns[].turn': 'Turn number; part of the key of each of its calls.',
  'turns[].calls': 'The calls of the turn, run in order.',
  'turns[].calls[].call_id': 'The call id; part of the key. Must not end with `#compensate`.',
  'turns[].calls[].tool': 'A catalog tool (`settle tools`) or `spawn_subagent`.',
  'turns[].calls[].args': "The tool's arguments (`settle tools`); at most 128 KiB of JSON, 64 levels deep.",
  model: 'Model driver: ask an OpenAI-compatible chat-completions server for calls until a final answer or a limit. Not with `turns`.',
  'model.baseUrl':
    "The server's base URL (the adapter POSTs to `${baseUrl}/chat/completions`); must be in the worker's `SETTLE_MODEL_ENDPOINTS`.",
  'model.model': 'Model name sent to the server.',
  'model.apiKeyEnv':
    "Name of the worker's environment variable holding the API key (never enters history); must be in the worker's `SETTLE_MODEL_KEY_ENVS`.",
  'model.system': 'System message.',
  'model.temperature': 'Sampling temperature.',
  'model.task': 'The task: the first user message.',
  'model.maxTurns': 'Stop after this many model turns (default 20).',
  'model.maxTotalTokens': 'Stop once the model has used this many tokens in total.',
  leaseMs: 'Endpoint-record lease, renewed by heartbeats every leaseMs/3 (default 3000).',
  backoff: 'Backoff between retries of a busy or not-executed call: initial × 2^n, capped.',
  'backoff.initialMs': 'First delay (default 1000).',
  'backoff.maxMs': 'Largest delay (default 30000); at least `initialMs`.',
  network: "Grants nothing: sandboxed commands get the network only from the capability's `connect` right. Kept for recorded inputs.",
  approvalTimeoutMs: 'How long an A3 call waits for approval before it is denied (default 1 hour).',
  levelOverrides: 'Raise tools\' levels for this trajectory, e.g. `{"bash_execute": "A3"}`: approval for every shell command. Never lower.',
  'levelOverrides.*': "The level: A1, A2 or A3, at least the catalog's (a read-only A0 tool cannot be raised).",
  parentTrajectoryId: 'Parent trajectory id, set for sub-agents (shown as a search attribute).',
  keyMode: "`hmac`: keys are HMAC-SHA-256 with the worker's `SETTLE_KEY_SECRET`, derived outside history (default `sha256`).",
  capability: 'The signed capability (`settle cap mint`), checked at every access; required when the worker holds capability keys.',
  'capability.body': 'What the token grants (`settle cap show`); signed as a whole.',
  'capability.sig': 'The signature over the body.',
  maxHistoryEvents: 'Continue-as-new once history passes this many events (default: when Temporal suggests it).',
};

/** `spawn_subagent` arguments, by path. */
export const SPAWN_DESCRIPTIONS: Record<string, string> = {
  task: 'What the sub-agent must do (its first user message when model-driven).',
  rights: "Rights for the sub-agent: a subset of this trajectory's (`read`, `write`, `exec`, `connect`).",
  objects: "Objects for the sub-agent, each within one of this trajectory's (e.g. `path:/ws/sub`, `host:api.example.com:443`).",
  max_cost: "Per-call cost ceiling in cost units; at most this trajectory's.",
  budget: "Total cost units, reserved from this trajectory's remaining budget; unspent units return.",
  expires_in_ms: "Lifetime in milliseconds, capped at this trajectory's expiry.",
  turns: "Scripted turns for the sub-agent (as a spec's `turns`); absent: it is model-driven with this trajectory's model.",
};

export interface ReferenceRow {
  path: string;
  type: string;
  required: boolean;
  limits: string;
  description: string;
}

/** One row per field of a JSON Schema, depth first. Capability internals and nested turns are not expanded. */
export function referenceRows(schema: JsonSchema, descriptions: Record<string, string>, stopAt: readonly string[] = []): ReferenceRow[] {
  const rows: ReferenceRow[] = [];
  const walk = (node: JsonSchema, prefix: string, required: boolean) => {
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      const path = prefix ? `${prefix}.${name}` : name;
      rows.push({
        path,
        type: typeOf(child),
        required: required && (node.required ?? []).includes(name),
        limits: limitsOf(child),
        description: descriptions[path] ?? '',
      });
      if (stopAt.includes(path)) continue;
      if (child.properties) walk(child, path, true);
      if (child.items?.properties) walk(child.items, `${path}[]`, true);
      if (typeof child.additionalProperties === 'object' && Object.keys(child.additionalProperties).length && !child.properties)
        rows.push({
          path: `${path}.*`,
          type: typeOf(child.additionalProperties),
          required: false,
          limits: limitsOf(child.additionalProperties),
          description: descriptions[`${path}.*`] ?? '',
        });
    }
  };
  walk(schema, '', true);
  return rows;
}

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  if (s.anyOf) return s.anyOf.map(typeOf).join(' \\| ');
  const t = Array.isArray(s.type) ? s.type.join(' \\| ') : (s.type ?? 'any');
  if (t === 'array') return `array of ${s.items ? typeOf(s.items) : 'any'}`;
  return t;
}

function limitsOf(s: JsonSchema): string {
  const parts: string[] = [];
  const range = (lo: number | undefined, hi: number | undefined, unit: string) => {
    if (lo !== undefined && hi !== undefined && hi < Number.MAX_SAFE_INTEGER) parts.push(`${lo}–${hi}${unit}`);
    else if (lo !== undefined && (lo > 0 || unit === '')) parts.push(`≥ ${lo}${unit}`);
    else if (hi !== undefined && hi < Number.MAX_SAFE_INTEGER) parts.push(`≤ ${hi}${unit}`);
  };
  range(s.minimum, s.maximum, '');
  range(s.minLength, s.maxLength, ' characters');
  range(s.minItems, s.maxItems, ' items');
  if (s.format) parts.push(s.format);
  return parts.join(', ');
}

function table(rows: ReferenceRow[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    '| field | type | required | limits | meaning |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| \`${r.path}\` | ${r.type} | ${r.required ? 'yes' : ''} | ${r.limits} | ${cell(r.description)} |`),
  ].join('\n');
}

const inputSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;

/** The spec's rows and `spawn_subagent`'s, from the schemas. */
export function specRows(): { spec: ReferenceRow[]; spawn: ReferenceRow[] } {
  return {
    spec: referenceRows(inputSchema(TrajectorySpecSchema()), SPEC_DESCRIPTIONS, ['capability.body']),
    spawn: referenceRows(inputSchema(spawnSubagentArgs()), SPAWN_DESCRIPTIONS, ['turns']),
  };
}

/** The generated block of docs/spec.md. */
export function specReference(): string {
  const { spec, spawn } = specRows();
  return `### A spec's fields\n\n${table(spec)}\n\n### \`spawn_subagent\`'s arguments\n\n${table(spawn)}\n`;
}

const START = '<!-- spec-reference:start -->';
const END = '<!-- spec-reference:end -->';

/** The generated block as it stands in a document, or null without the markers. */
export function specReferenceIn(markdown: string): string | null {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  return start < 0 || end < start ? null : markdown.slice(start + START.length, end).trim() + '\n';
}

/** The document with its generated block replaced by the current one. */
export function replaceSpecReference(markdown: string): string {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/spec.md: the markers ${START} … ${END} must be present`);
  return `${markdown.slice(0, start + START.length)}\n\n${specReference()}\n${markdown.slice(end)}`;
}
