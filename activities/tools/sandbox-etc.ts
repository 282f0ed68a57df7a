/**
 * The /etc a sandboxed shell sees: the files a shell and common tools read, nothing else — no
 * /etc/shadow, no /etc/ssh or /etc/ssl/private keys, no host passwd (a synthetic one names the
 * sandbox user). Everything is read-only.
 */
export const ETC_FILES = [
  'alternatives', // /usr/bin/awk and friends are links through here on Debian
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'debian_version',
  'gai.conf',
  'host.conf',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'magic',
  'magic.mime',
  'mime.types',
  'nsswitch.conf',
  'os-release',
  'perl',
  'profile',
  'protocols',
  'services',
  'ssl/certs',
  'ssl/openssl.cnf',
  'timezone',
];

/** Synthetic files: the sandbox user's own identity, and localhost. */
export function syntheticEtc(uid: number, gid: number): Record<string, string> {
  return {
    passwd: `sandbox:x:${uid}:${gid}:settle sandbox:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `sandbox:x:${gid}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n',
    hostname: 'sandbox\n',
  };
}
