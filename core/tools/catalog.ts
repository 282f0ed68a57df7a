/**
 * The tool catalog as both sides see it: each tool defined once by its zod argument model, its
 * description and its side-effect annotation (docs/design.md#side-effect-levels). The JSON Schema published to
 * models is generated from the same model the runtime validates with, so they cannot drift.
 * Levels come from this registry only, never from annotations supplied by a tool server.
 */
import { z } from 'zod';
import { BASH_EXECUTE, bashExecuteArgs } from './bash-execute';
import { FILE_EDIT, fileEditArgs } from './file-edit';
import { FILE_VIEW, fileViewArgs } from './file-view';
import { GREP_SEARCH, grepSearchArgs } from './grep-search';
import { HTTP_REQUEST, httpRequestArgs } from './http-request';

/** What a tool does to the world, as declared by us. */
export type SideEffectAnnotation = 'read-only' | 'idempotent' | 'reversible' | 'destructive';

/** A0 read-only · A1 idempotent · A2 reversible side effect · A3 destructive/irreversible. */
export type SideEffectLevel = 'A0' | 'A1' | 'A2' | 'A3';

/** Levels from least to most guarded. The one place their order is defined. */
export const LEVEL_ORDER: readonly SideEffectLevel[] = ['A0', 'A1', 'A2', 'A3'];

export function isSideEffectLevel(value: unknown): value is SideEffectLevel {
  return typeof value === 'string' && (LEVEL_ORDER as readonly string[]).includes(value);
}

/** Whether `level` is at least as guarded as `floor`. */
export function levelAtLeast(level: SideEffectLevel, floor: SideEffectLevel): boolean {
  return LEVEL_ORDER.indexOf(level) >= LEVEL_ORDER.indexOf(floor);
}

export const LEVEL_OF: Record<SideEffectAnnotation, SideEffectLevel> = {
  'read-only': 'A0',
  idempotent: 'A1',
  reversible: 'A2',
  destructive: 'A3',
};

/**
 * Whether a reconciliation probe can tell if an in-doubt call of this tool took effect
 * (docs/design.md#probes): `true`, `false`, or decided per call from its validated arguments.
 * A call whose tool declares no probe waits for an operator at once and is never re-probed.
 */
export type ProbeSupport = boolean | ((args: Record<string, unknown>) => boolean);

export interface CatalogEntry {
  name: string;
  annotation: SideEffectAnnotation;
  level: SideEffectLevel;
  probe: ProbeSupport;
  /** The argument model, built on first use and then kept (core/lazy.ts). */
  args: () => z.ZodType;
}

/**
 * `args` is a function that builds the model on first use: workflow code pays only for the tools
 * a trajectory calls. A function, not a getter: this module is preloaded into the workflow
 * sandbox's shared module cache, whose deep freeze reads every property (a getter would build
 * the schema then and freeze it, and a frozen zod schema cannot parse; workers/workflow-bundle.ts).
 */
function entry<N extends string>(name: N, annotation: SideEffectAnnotation, probe: ProbeSupport, args: () => z.ZodType) {
  return { name, annotation, level: LEVEL_OF[annotation], probe, args } as const;
}

export const CATALOG = {
  // Probed by the run markers the worker keeps (docs/design.md#shell-run-markers): not started →
  // not executed, exited → completed with its recorded output, started and not exited → unknown.
  [BASH_EXECUTE]: entry(BASH_EXECUTE, 'reversible', true, bashExecuteArgs),
  [FILE_VIEW]: entry(FILE_VIEW, 'read-only', false, fileViewArgs),
  // Intent and probe by SHA-256 of the file before and after.
  [FILE_EDIT]: entry(FILE_EDIT, 'reversible', true, fileEditArgs),
  [GREP_SEARCH]: entry(GREP_SEARCH, 'read-only', false, grepSearchArgs),
  // A1: the derived key goes downstream as Idempotency-Key; probed by repeating the request with
  // that key, or by reading the call's status_url (docs/http-request.md).
  [HTTP_REQUEST]: entry(HTTP_REQUEST, 'idempotent', true, httpRequestArgs),
} as const satisfies Record<string, CatalogEntry>;

export type ToolName = keyof typeof CATALOG;

/** The catalog's tools that need no workspace: every other one reads or changes a workspace on one host's disk. */
export const WORKSPACE_FREE_TOOLS: ReadonlySet<string> = new Set([HTTP_REQUEST]);

/** Whether calls of `tool` (a catalog tool) touch its trajectory's workspace: they run on the workspace's host (core/hosts.ts). */
export function usesWorkspace(tool: string): boolean {
  return isToolName(tool) && !WORKSPACE_FREE_TOOLS.has(tool);
}

export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(CATALOG, name);
}

/** Whether an in-doubt call of `tool` with these (validated) arguments can be settled by a probe. */
export function declaresProbe(tool: string, args: Record<string, unknown>): boolean {
  if (!isToolName(tool)) return false;
  const probe: ProbeSupport = CATALOG[tool].probe;
  return typeof probe === 'function' ? probe(args) : probe;
}

/** The level a tool runs at in a trajectory: the catalog's, or a higher override (never lower). */
export function effectiveLevel(tool: ToolName, overrides: Partial<Record<string, SideEffectLevel>> | undefined): SideEffectLevel {
  const base = CATALOG[tool].level;
  const override = overrides?.[tool];
  return override && levelAtLeast(override, base) ? override : base;
}

/** A tool definition exactly as published to a model. */
export interface PublishedTool {
  name: string;
  description: string;
  /** JSON Schema draft 2020-12 of the arguments a model may send (defaults are optional). */
  parameters: Record<string, unknown>;
  /** settle's own side-effect level; informative for clients, authoritative only here. */
  'x-settle-level': SideEffectLevel;
}

export function publishedCatalog(): PublishedTool[] {
  return Object.values(CATALOG).map((tool) => {
    const schema = z.toJSONSchema(tool.args(), { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
    const { description, ...parameters } = schema;
    return { name: tool.name, description: typeof description === 'string' ? description : '', parameters, 'x-settle-level': tool.level };
  });
}
