/**
 * What the egress proxy lets a sandboxed command reach (docs/security.md#egress): a target must be
 * within one of the capability's `host:` objects (name and port), and every address it is
 * connected to must be public — never loopback, private, link-local, this machine's own
 * addresses or the worker's own services. The one escape is the operator's:
 *
 *   SETTLE_EGRESS_ALLOW_INTERNAL  comma-separated `address:port` pairs (IPv4 `a.b.c.d:p`, IPv6
 *                                 `[addr]:p`) that may be reached although internal — exact
 *                                 pairs, no ranges. Still never the worker's own services.
 */
import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import { parseHostSpec, objectContains, type HostTarget } from '../../core/capability/rules';
import { InputError } from '../../core/errors';

export const ALLOW_INTERNAL_VARIABLE = 'SETTLE_EGRESS_ALLOW_INTERNAL';

/** Why an address is internal, or null when it is public. */
export function internalAddress(address: string): string | null {
  const family = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : null;
  if (!family) return 'not an IP address';
  for (const [list, why] of INTERNAL) if (list.check(address, family)) return why;
  if (family === 'ipv6' && IPV4_IN_IPV6.check(address, 'ipv6')) return 'an IPv4 address spelled as IPv6 (reserved)';
  if (ownAddresses().has(normalise(address))) return "one of this machine's own addresses";
  return null;
}

function ranges(why: string, v4: string[], v6: string[] = []): [net.BlockList, string] {
  const list = new net.BlockList();
  for (const r of v4) list.addSubnet(r.split('/')[0]!, Number(r.split('/')[1]), 'ipv4');
  for (const r of v6) list.addSubnet(r.split('/')[0]!, Number(r.split('/')[1]), 'ipv6');
  return [list, why];
}

// BlockList checks IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) against the IPv4 rules too.
const INTERNAL: [net.BlockList, string][] = [
  ranges('loopback', ['127.0.0.0/8'], ['::1/128']),
  ranges('unspecified ("this host")', ['0.0.0.0/8'], ['::/128']),
  // Site-local (fec0::/10) is deprecated but still routed inside a site, like a private range.
  ranges('private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10'], ['fc00::/7', 'fec0::/10']),
  ranges('link-local', ['169.254.0.0/16'], ['fe80::/10']),
  ranges('multicast or broadcast', ['224.0.0.0/4', '255.255.255.255/32'], ['ff00::/8']),
  // IANA's special-purpose registries (iana-ipv4-special-registry, iana-ipv6-special-registry):
  // every block that is not globally reachable. Blocks that carry an IPv4 address inside (NAT64,
  // 6to4, Teredo) are refused whole, as that address may be an internal one. A table of our own:
  // the address libraries at hand (ipaddr.js 1.9, ip-address 10) know only some of these blocks.
  ranges(
    'reserved',
    [
      '192.0.0.0/24', // IETF protocol assignments
      '192.0.2.0/24', // documentation (TEST-NET-1)
      '192.88.99.0/24', // 6to4 relay anycast (deprecated)
      '198.18.0.0/15', // benchmarking
      '198.51.100.0/24', // documentation (TEST-NET-2)
      '203.0.113.0/24', // documentation (TEST-NET-3)
      '240.0.0.0/4', // reserved for future use
    ],
    [
      '64:ff9b::/96', // NAT64, well-known prefix
      '64:ff9b:1::/48', // NAT64, local use
      '100::/64', // discard-only
      '100:0:0:1::/64', // dummy prefix
      // IETF protocol assignments, all of it: Teredo (2001::/32), benchmarking (2001:2::/48),
      // ORCHID (2001:10::/28), ORCHIDv2 (2001:20::/28), drone ids (2001:30::/28) are identifiers
      // or test space; the few anycast services inside are no HTTP destination.
      '2001::/23',
      '2001:db8::/32', // documentation
      '2002::/16', // 6to4
      '3fff::/20', // documentation
      '5f00::/16', // SRv6 SIDs
    ],
  ),
];

/**
 * IPv6 spellings of IPv4 addresses, refused whole once the rules above named what they could:
 * IPv4-compatible (::/96), IPv4-mapped (::ffff:0:0/96) and IPv4-translated (::ffff:0:0:0/96). A
 * list of its own, asked for IPv6 addresses only: BlockList would match every IPv4 address
 * against the mapped prefix.
 */
const IPV4_IN_IPV6 = ranges('', [], ['::/96', '::ffff:0:0/96', '::ffff:0:0:0/96'])[0];

function normalise(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return (mapped ? mapped[1]! : address).toLowerCase();
}

let own: { at: number; set: Set<string> } | undefined;
/** This machine's interface addresses (its services listen there), re-read at most every 10 s. */
function ownAddresses(): Set<string> {
  if (!own || Date.now() - own.at > 10_000) {
    const set = new Set<string>();
    for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) set.add(normalise(a.address));
    own = { at: Date.now(), set };
  }
  return own.set;
}

/** `address:port` pairs the operator allows although internal (SETTLE_EGRESS_ALLOW_INTERNAL). */
export function allowedInternal(env: NodeJS.ProcessEnv = process.env): Set<string> {
  const set = new Set<string>();
  const raw = env[ALLOW_INTERNAL_VARIABLE] ?? '';
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .forEach((entry, i) => {
      const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d+\.\d+\.\d+\.\d+)):([1-9][0-9]{0,4})$/.exec(entry);
      const address = m?.[1] ?? m?.[2];
      if (!m || !address || !net.isIP(address) || Number(m[3]) > 65535)
        throw new InputError(
          `${ALLOW_INTERNAL_VARIABLE}[${i}]`,
          `be an address and port, 10.0.0.5:443 or [fd00::5]:443 (got ${JSON.stringify(entry)})`,
        );
      set.add(pair(address, Number(m[3])));
    });
  return set;
}

function pair(address: string, port: number): string {
  return `${normalise(address)}#${port}`;
}

/** The worker's own services (its database, Temporal, metrics): never reachable through the proxy. */
const workerServices = new Map<string, { host: string; port: number }>();

/** Registers one of the worker's own services by host and port (from its URL or address). */
export function registerWorkerService(host: string, port: number): void {
  workerServices.set(`${host.toLowerCase()}#${port}`, { host: host.replace(/^\[|\]$/g, '').toLowerCase(), port });
}

/** Registers a service by URL (postgres://…, http://…); the default port when the URL has none. */
export function registerWorkerServiceUrl(url: string, defaultPort: number): void {
  try {
    const u = new URL(url);
    if (u.hostname) registerWorkerService(u.hostname, u.port ? Number(u.port) : defaultPort);
  } catch {
    /* not a URL: nothing this check could match */
  }
}

if (process.env.DATABASE_URL) registerWorkerServiceUrl(process.env.DATABASE_URL, 5432);

/** Whether (address, port) is one of the worker's own services: its port, on this machine or at the service's own addresses. */
async function workerService(address: string, port: number): Promise<string | null> {
  for (const s of workerServices.values()) {
    if (s.port !== port) continue;
    const local = internalAddress(address);
    if (local === 'loopback' || local === "one of this machine's own addresses" || local?.startsWith('unspecified'))
      return `${s.host}:${s.port}`;
    const addresses = await dns.promises.lookup(s.host, { all: true }).catch(() => []);
    if (addresses.some((a) => normalise(a.address) === normalise(address))) return `${s.host}:${s.port}`;
  }
  return null;
}

export type EgressDecision = { allowed: true; target: HostTarget; address: string } | { allowed: false; reason: string };

export interface EgressPolicy {
  /** The capability's `host:` objects, canonical (`host:name[:port]`). */
  grants: readonly string[];
  /** SETTLE_EGRESS_ALLOW_INTERNAL, parsed. */
  allowInternal: ReadonlySet<string>;
  lookup?: (host: string) => Promise<{ address: string }[]>;
}

/**
 * Decides one connection: the authority (`name:port`) within a grant, then the name resolved
 * here (never by the command) and the first acceptable address chosen — the proxy connects to
 * that address, so a second resolution cannot swap it.
 */
export async function decideEgress(authority: string, policy: EgressPolicy): Promise<EgressDecision> {
  let target: HostTarget;
  try {
    if (!/:\d+$/.test(authority)) throw new InputError('target', `name a port (got ${JSON.stringify(authority)})`);
    target = parseHostSpec(authority, 'target');
  } catch (err) {
    if (err instanceof InputError) return { allowed: false, reason: `${authority} cannot be granted: ${err.message}` };
    throw err;
  }
  const spec = `${target.host}:${target.port}`;
  if (!policy.grants.some((g) => objectContains(g, target)))
    return { allowed: false, reason: `${spec} is not within the capability's host objects (${policy.grants.join(', ') || 'none'})` };
  const lookup = policy.lookup ?? ((h: string) => dns.promises.lookup(h, { all: true, verbatim: true }));
  let addresses: { address: string }[];
  try {
    addresses = await lookup(target.host);
  } catch (err) {
    return { allowed: false, reason: `${target.host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  const refusals: string[] = [];
  for (const { address } of addresses) {
    const service = await workerService(address, target.port!);
    if (service) {
      refusals.push(`${address} port ${target.port} is the worker's own service ${service}`);
      continue;
    }
    const internal = internalAddress(address);
    if (internal && !policy.allowInternal.has(pair(address, target.port!))) {
      refusals.push(`${address} is ${internal} (the worker's operator may allow ${address}:${target.port} in ${ALLOW_INTERNAL_VARIABLE})`);
      continue;
    }
    return { allowed: true, target, address };
  }
  return { allowed: false, reason: `${spec} resolves only to refused addresses: ${refusals.join('; ') || 'none'}` };
}
