/**
 * Which addresses egress calls internal (activities/tools/egress-policy.ts), range by range: the
 * first and the last address of every range that is not public, written out here from IANA's
 * special-purpose registries (IPv4 and IPv6) rather than read from the policy's own table, and
 * public neighbours just outside them.
 */
import { describe, expect, it } from 'vitest';
import { internalAddress } from '../../activities/tools/egress-policy';

/** [range, why the registry or the policy keeps it from the internet]. */
const NOT_PUBLIC: [string, string][] = [
  ['0.0.0.0/8', 'this network'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared address space (CGNAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation (TEST-NET-1)'],
  ['192.88.99.0/24', '6to4 relay anycast (deprecated)'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation (TEST-NET-2)'],
  ['203.0.113.0/24', 'documentation (TEST-NET-3)'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'limited broadcast'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'IPv4-compatible'],
  ['::ffff:0:0/96', 'IPv4-mapped'],
  ['::ffff:0:0:0/96', 'IPv4-translated'],
  ['64:ff9b::/96', 'NAT64'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['100::/64', 'discard-only'],
  ['100:0:0:1::/64', 'dummy prefix'],
  ['2001::/23', 'IETF protocol assignments'],
  ['2001::/32', 'Teredo'],
  ['2001:2::/48', 'benchmarking'],
  ['2001:10::/28', 'ORCHID (deprecated)'],
  ['2001:20::/28', 'ORCHIDv2'],
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', '6to4'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'SRv6 SIDs'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
];

/** Public addresses right next to the ranges above. */
const PUBLIC = [
  '1.0.0.0',
  '9.255.255.255',
  '11.0.0.0',
  '192.0.1.255',
  '192.0.3.0',
  '192.88.98.255',
  '192.88.100.0',
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.255',
  '2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:200::',
  '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:db9::',
  '2003::',
  '3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  '3fff:1000::',
  '5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  '5f01::',
  '2606:4700:4700::1111',
];

/** The first and the last address of a range, in the canonical spelling. */
function ends(range: string): [string, string] {
  const [base, bits] = range.split('/') as [string, string];
  const v4 = base.includes('.');
  const width = v4 ? 32 : 128;
  const value = v4 ? base.split('.').reduce((n, part) => (n << 8n) | BigInt(part), 0n) : parseV6(base);
  const host = (1n << BigInt(width - Number(bits))) - 1n;
  const first = value & ~host & ((1n << BigInt(width)) - 1n);
  return [format(first, v4), format(first | host, v4)];
}

function parseV6(text: string): bigint {
  const [head, tail] = text.split('::') as [string, string | undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const all =
    tail === undefined
      ? groups(head)
      : [...groups(head), ...Array(8 - groups(head).length - groups(tail).length).fill('0'), ...groups(tail)];
  return all.reduce((n, g) => (n << 16n) | BigInt(`0x${g}`), 0n);
}

function format(value: bigint, v4: boolean): string {
  if (v4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
  return [...Array(8).keys()].map((i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');
}

describe('egress: addresses that are not public', () => {
  it.each(NOT_PUBLIC)('%s (%s): its first and last address are refused', (range) => {
    for (const address of ends(range)) expect([address, internalAddress(address)]).toEqual([address, expect.any(String)]);
  });

  it.each(PUBLIC)('%s, just outside them, is public', (address) => {
    expect(internalAddress(address)).toBeNull();
  });
});
