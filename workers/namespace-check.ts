/**
 * A worker refuses to start on a namespace without settle's search attributes. Trajectories and
 * settled() workflows upsert them, and Temporal fails every workflow task that upserts one the
 * namespace does not have: the workflow never progresses, and the only sign is a repeated
 * `BadSearchAttributes` warning. One line at start, with the command that registers them, instead.
 */
import type { NativeConnection } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES, type SearchAttributeName } from '../core/search-attributes';

/** temporal.api.enums.v1.IndexedValueType's numbers for the types settle uses (not loading the whole API for two). */
const INDEXED_VALUE_TYPE: Record<(typeof SEARCH_ATTRIBUTES)[SearchAttributeName], number> = { Keyword: 2, Int: 3 };

/** What the namespace lacks, or why it could not be asked (a server that does not let this client list them). */
export type NamespaceCheck = { ok: true } | { ok: false; line: string } | { ok: 'unknown'; line: string };

export async function checkSearchAttributes(connection: NativeConnection, namespace: string): Promise<NamespaceCheck> {
  let registered: Record<string, number>;
  try {
    const response = await connection.operatorService.listSearchAttributes({ namespace });
    registered = response.customAttributes ?? {};
  } catch (err) {
    // Temporal Cloud, or a role without the operator API: settle cannot look, so it says so and goes on.
    return {
      ok: 'unknown',
      line:
        `settle worker: could not list the search attributes of namespace ${namespace} (${(err as Error).message.split('\n')[0]}); ` +
        `make sure it has ${describe(Object.keys(SEARCH_ATTRIBUTES) as SearchAttributeName[])} (docs/deploying.md)`,
    };
  }
  const wrong = (Object.keys(SEARCH_ATTRIBUTES) as SearchAttributeName[]).filter(
    (name) => registered[name] !== INDEXED_VALUE_TYPE[SEARCH_ATTRIBUTES[name]],
  );
  if (wrong.length === 0) return { ok: true };
  const mistyped = wrong.filter((name) => registered[name] !== undefined);
  return {
    ok: false,
    line:
      `settle worker: namespace ${namespace} lacks settle's search attributes ${describe(wrong)}` +
      (mistyped.length > 0 ? ` (${mistyped.join(', ')} exist with another type: delete them first)` : '') +
      `; without them no settle workflow progresses. Register them once: ${registerCommand(namespace, wrong)}`,
  };
}

/**
 * The Temporal CLI commands that register `names` on `namespace`, one per attribute (the CLI pairs
 * one `--type` with one `--name`). Temporal Cloud: `tcld namespace search-attributes add`.
 */
export function registerCommand(namespace: string, names: readonly SearchAttributeName[]): string {
  return names
    .map((name) => `temporal operator search-attribute create --namespace ${namespace} --name ${name} --type ${SEARCH_ATTRIBUTES[name]}`)
    .join(' && ');
}

function describe(names: readonly SearchAttributeName[]): string {
  return names.map((name) => `${name} (${SEARCH_ATTRIBUTES[name]})`).join(', ');
}

/** Throws the one-line refusal when the namespace lacks them; warns when it cannot tell. */
export async function requireSearchAttributes(
  connection: NativeConnection,
  namespace: string,
  warn: (line: string) => void,
): Promise<void> {
  const check = await checkSearchAttributes(connection, namespace);
  if (check.ok === false) throw new Error(check.line);
  if (check.ok === 'unknown') warn(check.line);
}
