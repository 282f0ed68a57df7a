/**
 * `settle doctor`'s answers about Temporal, reached as a worker reaches it (client/connection.ts:
 * the envconfig profile and TEMPORAL_* environment): the connection and its TLS, the namespace,
 * and settle's search attributes in it (core/search-attributes.ts).
 */
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { describeTarget, loadTemporalTarget } from '../../client/connection';
import { errorMessage } from '../../core/errors';
import { temporalTlsFinding } from '../../client/tls-finding';
import { tlsHandshakeProblem } from '../../client/tls-probe';
import { SEARCH_ATTRIBUTES, searchAttributeProblems } from '../../core/search-attributes';
import type { DoctorLine } from './lines';

const DEADLINE_MS = 10_000;
const GRPC_NOT_FOUND = 5;

export async function temporalLines(env: NodeJS.ProcessEnv): Promise<DoctorLine[]> {
  const target = loadTemporalTarget({}, env);
  const lines: DoctorLine[] = [temporalTlsFinding(target)];
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...target.connectionOptions, connectTimeout: DEADLINE_MS });
  } catch (err) {
    const tlsProblem = await tlsHandshakeProblem(target).catch(() => null);
    lines.unshift({
      level: 'fail',
      line: tlsProblem
        ? `temporal: cannot connect to ${describeTarget(target)}: ${tlsProblem}`
        : `temporal: cannot connect to ${describeTarget(target)} (${errorMessage(err)}): check TEMPORAL_ADDRESS (or the profile) and the TLS settings`,
    });
    return lines;
  }
  try {
    lines.unshift({ level: 'ok', line: `temporal: connected to ${describeTarget(target)}` });
    const call = <T>(fn: () => Promise<T>) => connection.withDeadline(Date.now() + DEADLINE_MS, fn);
    try {
      await call(() => connection.workflowService.describeNamespace({ namespace: target.namespace }));
    } catch (err) {
      const missing = (err as { code?: unknown }).code === GRPC_NOT_FOUND;
      lines.push({
        level: 'fail',
        line: missing
          ? `namespace: ${target.namespace} does not exist: create it (temporal operator namespace create ${target.namespace}) or set TEMPORAL_NAMESPACE`
          : `namespace: could not describe ${target.namespace} (${errorMessage(err)}): check the credentials' access to it`,
      });
      return lines;
    }
    lines.push({ level: 'ok', line: `namespace: ${target.namespace} exists` });
    lines.push(await searchAttributesLine(call, connection, target.namespace));
    return lines;
  } finally {
    await connection.close();
  }
}

async function searchAttributesLine(
  call: <T>(fn: () => Promise<T>) => Promise<T>,
  connection: Connection,
  namespace: string,
): Promise<DoctorLine> {
  let custom: Record<string, proto.temporal.api.enums.v1.IndexedValueType>;
  try {
    custom = (await call(() => connection.operatorService.listSearchAttributes({ namespace }))).customAttributes ?? {};
  } catch (err) {
    return {
      level: 'warn',
      line: `search attributes: could not list them in ${namespace} (${errorMessage(err)}): check that it has ${describeExpected()} (e.g. in Temporal Cloud's namespace settings)`,
    };
  }
  const problems = searchAttributeProblems(Object.fromEntries(Object.entries(custom).map(([name, type]) => [name, typeName(type)])));
  if (problems.length === 0)
    return { level: 'ok', line: `search attributes: all ${Object.keys(SEARCH_ATTRIBUTES).length} of settle's in ${namespace}` };
  const create = problems.map((p) => `--name ${p.name} --type ${p.expected}`).join(' ');
  const what = problems.map((p) => `${p.name} (${p.expected}${p.found ? `, found ${p.found}` : ''})`).join(', ');
  return {
    level: 'fail',
    line: `search attributes: ${namespace} lacks ${what}: temporal operator search-attribute create --namespace ${namespace} ${create}`,
  };
}

/** Keyword, Int, … as SEARCH_ATTRIBUTES spells them, from the protocol's INDEXED_VALUE_TYPE_KEYWORD, … */
function typeName(type: proto.temporal.api.enums.v1.IndexedValueType): string {
  // A CommonJS module: its namespaces are reached through the default export under ESM.
  const name = proto.temporal.api.enums.v1.IndexedValueType[type] ?? String(type);
  return name
    .replace(/^INDEXED_VALUE_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}

function describeExpected(): string {
  return Object.entries(SEARCH_ATTRIBUTES)
    .map(([name, type]) => `${name} (${type})`)
    .join(', ');
}
