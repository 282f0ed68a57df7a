/**
 * The pure rules of capabilities (docs/design.md#capabilities): what a token allows, and what a child may be
 * given. Signature, key id, symlinks and budget need the runtime (activities/capability/);
 * everything decidable from the body alone is here, shared by workflow pre-checks and activities.
 */
import { canonicalPath, isWithin } from '../paths';
import { InputError } from '../errors';
import type { CapabilityBody, Right } from './token';

/** The component of C = (R, O, P, E) (plus signature, key and audience) that decided a denial. */
export type Component = 'signature' | 'kid' | 'audience' | 'rights' | 'objects' | 'cost' | 'budget' | 'expiry' | 'format';

export type Verdict = { allowed: true } | { allowed: false; component: Component; reason: string };

/**
 * A host target or object: a DNS name (an object also covers its subdomains) or an IPv4 address
 * (only itself), and a port. Without a port, the web's two: 80 and 443 (docs/security.md#egress).
 */
export type HostTarget = { kind: 'host'; host: string; port?: number };
/**
 * An MCP tool behind settle's gateway (docs/mcp.md): `server` is the name the gateway's operator
 * gave the upstream (never the name the server reports), `tool` one of its tools. As an object,
 * `tool: null` (`mcp:<server>`) grants every tool of that server.
 */
export type McpTarget = { kind: 'mcp'; server: string; tool: string | null };
export type Target = { kind: 'path'; path: string } | HostTarget | { kind: 'repo'; repo: string } | McpTarget;

/** The ports a host object or target without a port stands for. */
export const DEFAULT_HOST_PORTS: readonly number[] = [80, 443];

export interface AccessRequest {
  op: Right;
  target: Target;
  cost: number;
  /** The executing trajectory (workflow id from the activity context, never from arguments). */
  audience: string;
  nowMs: number;
}

const deny = (component: Component, reason: string): Verdict => ({ allowed: false, component, reason });

/** Every check that needs only the body. The caller adds signature, key id, symlinks and budget. */
export function checkBody(body: CapabilityBody, req: AccessRequest): Verdict {
  if (body.aud !== req.audience) return deny('audience', `issued to ${JSON.stringify(body.aud)}, used by ${JSON.stringify(req.audience)}`);
  if (req.nowMs >= body.exp) return deny('expiry', `expired at ${new Date(body.exp).toISOString()}`);
  if (!body.rights.includes(req.op)) return deny('rights', `${req.op} is not among ${body.rights.join(', ')}`);
  // A shell in the workspace can change any file there (sed -i, >, mv): exec implies write on it.
  if (req.op === 'exec' && !body.rights.includes('write'))
    return deny('rights', `exec also requires write (a shell can change any file in the workspace); held: ${body.rights.join(', ')}`);
  if (!Number.isFinite(req.cost) || req.cost < 0) return deny('cost', `cost must be a number ≥ 0 (got ${req.cost})`);
  if (req.cost > body.pred.max_cost) return deny('cost', `cost ${req.cost} exceeds the per-call ceiling ${body.pred.max_cost}`);
  let contained: boolean;
  try {
    const target = canonicalTarget(req.target); // once, not once per object
    contained = body.objects.some((o) => objectContainsCanonical(parseObjectMemo(o), target));
  } catch (err) {
    if (err instanceof InputError) return deny('objects', err.message);
    throw err;
  }
  if (!contained) return deny('objects', `${describeTarget(req.target)} is not within ${body.objects.join(', ')}`);
  return { allowed: true };
}

/** Whether the typed object (`path:/ws`, `host:example.com[:port]`, `repo:owner[/name]`) contains the target. */
export function objectContains(object: string, target: Target): boolean {
  return objectContainsCanonical(parseObject(object), canonicalTarget(target));
}

/** The target in canonical form (NFC path, lowercase host or repo); throws InputError when it has none. */
function canonicalTarget(target: Target): Target {
  switch (target.kind) {
    case 'path':
      return { kind: 'path', path: canonicalPath(target.path, 'target') };
    case 'host':
      return parseHostSpec(target.port === undefined ? target.host : `${target.host}:${target.port}`, 'target');
    case 'repo':
      return { kind: 'repo', repo: canonicalRepo(target.repo, 'target') };
    case 'mcp':
      return parseMcpSpec(target.tool === null ? target.server : `${target.server}/${target.tool}`, 'target');
  }
}

function objectContainsCanonical(object: Target, target: Target): boolean {
  if (object.kind === 'path' && target.kind === 'path') return isWithin(target.path, object.path); // segment-wise: /work never contains /workspace
  if (object.kind === 'host' && target.kind === 'host') return hostWithin(target, object);
  if (object.kind === 'repo' && target.kind === 'repo') return target.repo === object.repo || target.repo.startsWith(`${object.repo}/`);
  // A whole-server target (a child's `mcp:<server>` in attenuation) is only within a whole-server object.
  if (object.kind === 'mcp' && target.kind === 'mcp')
    return target.server === object.server && (object.tool === null || target.tool === object.tool);
  return false;
}

/**
 * parseObject for the objects of a token on the access path, remembered: a token's objects are
 * checked at every access and their canonical form never changes (parsing is pure). Objects that
 * fail to parse are not remembered, so the error is raised every time.
 */
const parsedObjects = new Map<string, Target>();
function parseObjectMemo(object: string): Target {
  const known = parsedObjects.get(object);
  if (known) return known;
  const parsed: Target = parseObject(object);
  if (parsedObjects.size >= 4096) parsedObjects.clear(); // a bound; a miss only re-parses
  parsedObjects.set(object, parsed);
  return parsed;
}

export function parseObject(object: string, field = 'object'): Target {
  const colon = object.indexOf(':');
  const kind = object.slice(0, colon);
  const value = object.slice(colon + 1);
  switch (kind) {
    case 'path':
      return { kind, path: canonicalPath(value, field) };
    case 'host':
      return parseHostSpec(value, field);
    case 'repo':
      return { kind, repo: canonicalRepo(value, field) };
    case 'mcp':
      return parseMcpSpec(value, field);
    default:
      throw new InputError(
        field,
        `be path:/abs/dir, host:example.com[:port], repo:owner/name or mcp:server[/tool] (got ${JSON.stringify(object)})`,
      );
  }
}

/**
 * `name` or `name:port`: a canonical host (canonicalHost) and a decimal port 1–65535 without
 * leading zeros. IPv6 literals are not part of the grammar (nothing can grant one).
 */
export function parseHostSpec(spec: string, field: string): HostTarget {
  const colon = spec.lastIndexOf(':');
  if (colon === -1) return { kind: 'host', host: canonicalHost(spec, field) };
  const port = spec.slice(colon + 1);
  if (!/^[1-9][0-9]{0,4}$/.test(port) || Number(port) > 65535)
    throw new InputError(field, `be host:name or host:name:port with a port from 1 to 65535 (got ${JSON.stringify(spec)})`);
  return { kind: 'host', host: canonicalHost(spec.slice(0, colon), field), port: Number(port) };
}

/** The canonical text of a host target (`name` or `name:port`), as in a `host:` object. */
export function hostSpec(t: HostTarget): string {
  return t.port === undefined ? t.host : `${t.host}:${t.port}`;
}

/**
 * A name is within itself and its subdomains; an IPv4 address only within itself. Ports: the
 * target's (or the default two, without one) must all be the object's.
 */
function hostWithin(target: HostTarget, object: HostTarget): boolean {
  const name = target.host === object.host || (!isIPv4(target.host) && target.host.endsWith(`.${object.host}`));
  const ports = target.port === undefined ? DEFAULT_HOST_PORTS : [target.port];
  const granted = object.port === undefined ? DEFAULT_HOST_PORTS : [object.port];
  return name && ports.every((p) => granted.includes(p));
}

export function isIPv4(host: string): boolean {
  return /^[0-9.]+$/.test(host);
}

/**
 * Lowercase DNS name of letters, digits and hyphens; no empty labels, no trailing dot. A name
 * whose last label is all digits must be an IPv4 address in dotted-quad form (no leading zeros):
 * `127.1` or `0177.0.0.1` would reach addresses their text does not show.
 */
export function canonicalHost(host: string, field: string): string {
  const h = host.toLowerCase();
  if (h.length > 253 || !/^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/.test(h)) {
    throw new InputError(field, `be a host name of letters, digits, hyphens and dots (got ${JSON.stringify(host)})`);
  }
  if (/(^|\.)[0-9]+$/.test(h)) {
    const quad = h.split('.');
    if (quad.length !== 4 || !quad.every((q) => /^(0|[1-9][0-9]{0,2})$/.test(q) && Number(q) <= 255))
      throw new InputError(field, `be a host name, or an IPv4 address as four decimal numbers 0–255 (got ${JSON.stringify(host)})`);
  }
  return h;
}

/** An MCP server name as the gateway's operator gives it: lower-case letters, digits, `.`, `_`, `-`. */
export const MCP_SERVER_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** An MCP tool name as the MCP specification allows it: 1–128 of letters, digits, `_`, `-`, `.`. */
export const MCP_TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * `server` or `server/tool`. The server name is compared exactly (it is the operator's, lower
 * case); the tool name exactly too (MCP tool names are case-sensitive).
 */
export function parseMcpSpec(spec: string, field: string): McpTarget {
  const slash = spec.indexOf('/');
  const server = slash === -1 ? spec : spec.slice(0, slash);
  const tool = slash === -1 ? null : spec.slice(slash + 1);
  if (!MCP_SERVER_NAME.test(server) || (tool !== null && !MCP_TOOL_NAME.test(tool))) {
    throw new InputError(
      field,
      `be mcp:server or mcp:server/tool (server: lower-case letters, digits, . _ -, at most 64; tool: letters, digits, . _ -, at most 128; got ${JSON.stringify(`mcp:${spec}`)})`,
    );
  }
  return { kind: 'mcp', server, tool };
}

/** `owner` or `owner/name`, GitHub-style characters, compared case-insensitively. */
export function canonicalRepo(repo: string, field: string): string {
  const r = repo.toLowerCase();
  if (!/^[a-z0-9][a-z0-9-]{0,38}(\/[a-z0-9._-]{1,100})?$/.test(r) || r.endsWith('/.') || r.endsWith('/..')) {
    throw new InputError(field, `be owner or owner/name (got ${JSON.stringify(repo)})`);
  }
  return r;
}

export interface ChildRequest {
  aud: string;
  rights: Right[];
  objects: string[];
  max_cost: number;
  budget: number;
  exp: number;
}

/**
 * Attenuation refuses any component wider than the parent's (R_c ⊆ R_p, every child object
 * within a parent object, P_c ⇒ P_p, E_c ≤ E_p). Budget against the parent's *remaining*
 * budget is checked where the budget lives (Postgres), atomically with the reservation.
 */
export function attenuationVerdict(parent: CapabilityBody, child: ChildRequest): Verdict {
  const extra = child.rights.filter((r) => !parent.rights.includes(r));
  if (extra.length) return deny('rights', `the child asks for ${extra.join(', ')}, which the parent does not hold`);
  for (const o of child.objects) {
    let target: Target;
    try {
      target = parseObject(o, 'objects');
    } catch (err) {
      if (err instanceof InputError) return deny('objects', err.message);
      throw err;
    }
    if (!parent.objects.some((p) => objectContains(p, target)))
      return deny('objects', `${o} is not within the parent's ${parent.objects.join(', ')}`);
  }
  if (child.max_cost > parent.pred.max_cost)
    return deny('cost', `per-call ceiling ${child.max_cost} exceeds the parent's ${parent.pred.max_cost}`);
  if (child.budget > parent.pred.budget) return deny('budget', `budget ${child.budget} exceeds the parent's ${parent.pred.budget}`);
  if (child.exp > parent.exp)
    return deny('expiry', `expiry ${new Date(child.exp).toISOString()} is later than the parent's ${new Date(parent.exp).toISOString()}`);
  if (parent.depth >= 16) return deny('format', 'the delegation chain is at its maximum depth (16)');
  return { allowed: true };
}

function describeTarget(t: Target): string {
  switch (t.kind) {
    case 'path':
      return `path ${t.path}`;
    case 'host':
      return `host ${hostSpec(t)}`;
    case 'repo':
      return `repo ${t.repo}`;
    case 'mcp':
      return `MCP tool mcp:${t.server}/${t.tool ?? '*'}`;
  }
}
