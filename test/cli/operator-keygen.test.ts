/** `settle operator keygen NAME`: a key pair whose halves load where they belong, and sign credentials that verify. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOperatorKeys, loadOperatorSigner } from '../../activities/operator/operator-keys';
import { mintCredential, verifyCredential } from '../../activities/operator/operator-credentials';
import { runNode, runSettle, SETTLE_BIN } from '../support/cli';
import { devOperatorKey, devOperatorKeys } from '../../cli/operator-key';

const claim = {
  purpose: 'approve',
  namespace: 'default',
  tool: 'bash_execute',
  call: 'c'.repeat(64),
  trajectoryId: 't-1',
  key: 'a'.repeat(64),
  decision: 'approve',
  reason: 'CHG-1',
} as const;

describe('settle operator keygen', { timeout: 60_000 }, () => {
  it('prints the private key for the operator and the public key for workers; they sign and verify', async () => {
    const r = await runSettle(['operator', 'keygen', 'alice']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const setting = (name: string) =>
      r.stdout
        .split('\n')
        .find((l) => l.startsWith(`${name}=`))!
        .slice(name.length + 1);
    const signer = loadOperatorSigner(setting('SETTLE_OPERATOR_KEY'));
    const keys = loadOperatorKeys(setting('SETTLE_OPERATOR_KEYS'));
    expect(signer.operator).toBe('alice');
    expect([...keys.keys.keys()]).toEqual(['alice']);
    expect(verifyCredential(mintCredential(signer, claim), claim, keys)).toMatchObject({ ok: true, body: { operator: 'alice' } });
    // Another pair's public key does not verify alice's credential.
    const other = await runSettle(['operator', 'keygen', 'alice']);
    const otherKeys = loadOperatorKeys(
      other.stdout
        .split('\n')
        .find((l) => l.startsWith('SETTLE_OPERATOR_KEYS='))!
        .split('=')[1]!,
    );
    expect(verifyCredential(mintCredential(signer, claim), claim, otherKeys)).toEqual({
      ok: false,
      rule: "carry alice's signature over its body (the signature does not match)",
    });
  });

  it('--out writes the private key owner-only and refuses to overwrite; a bad name exits 2 naming the rule', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-opkey-')), 'alice.key');
    const r = await runSettle(['operator', 'keygen', 'alice', '--out', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/^SETTLE_OPERATOR_KEY=/m); // the private key is only in the file
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(loadOperatorSigner(`@${file}`).operator).toBe('alice');
    expect((await runSettle(['operator', 'keygen', 'alice', '--out', file])).code).toBe(2);
    const bad = await runSettle(['operator', 'keygen', 'alice bob']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('NAME must be 1–64 letters, digits, . _ @ -');
  });

  it('refuses malformed keys, naming the variable and the rule', () => {
    expect(() => loadOperatorKeys('alice:abc')).toThrow('SETTLE_OPERATOR_KEYS[0] (alice) must hold a 32-byte Ed25519 public key');
    expect(() => loadOperatorKeys('nokey')).toThrow('SETTLE_OPERATOR_KEYS[0] must be NAME:base64url-public-key');
    expect(() => loadOperatorSigner('alice:abc')).toThrow('SETTLE_OPERATOR_KEY (alice) must hold an Ed25519 private key');
  });

  it('settle dev and the demo: one development key, kept owner-only and reused; the worker verifies with its public half', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'settle-devkey-')), 'operator-key');
    const first = devOperatorKey(file);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const again = devOperatorKey(file);
    expect(again.signer.operator).toBe(first.signer.operator);
    const keys = devOperatorKeys(again.signer);
    expect(verifyCredential(mintCredential(first.signer, claim), claim, keys)).toMatchObject({ ok: true });
  });
});

describe('settle operator public-key', { timeout: 60_000 }, () => {
  it('prints the SETTLE_OPERATOR_KEYS entry of the key the CLI signs with, and only its public half', async () => {
    const pair = await runSettle(['operator', 'keygen', 'carol']);
    const privateText = pair.stdout
      .split('\n')
      .find((l) => l.startsWith('SETTLE_OPERATOR_KEY='))!
      .slice('SETTLE_OPERATOR_KEY='.length);
    const r = await runSettle(['operator', 'public-key'], { env: { SETTLE_OPERATOR_KEY: privateText } });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain(privateText.split(':')[1]!);
    const line = r.stdout.split('\n').find((l) => l.startsWith('SETTLE_OPERATOR_KEYS='))!;
    expect(line).toBe(pair.stdout.split('\n').find((l) => l.startsWith('SETTLE_OPERATOR_KEYS=')));
    const keys = loadOperatorKeys(line.slice('SETTLE_OPERATOR_KEYS='.length));
    const signer = loadOperatorSigner(privateText);
    expect(verifyCredential(mintCredential(signer, claim), claim, keys)).toMatchObject({ ok: true, body: { operator: 'carol' } });
  });

  it("prints settle dev's development key from the project's state directory", async () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-project-'));
    fs.writeFileSync(path.join(project, 'package.json'), '{}');
    const { signer } = devOperatorKey(path.join(project, '.settle', 'operator-key'));
    const r = await runNode([SETTLE_BIN, 'operator', 'public-key'], { cwd: project, env: { SETTLE_OPERATOR_KEY: '' } });
    expect(r.stderr).toBe('');
    const line = r.stdout.split('\n').find((l) => l.startsWith('SETTLE_OPERATOR_KEYS='))!;
    expect([...loadOperatorKeys(line.slice('SETTLE_OPERATOR_KEYS='.length)).keys.keys()]).toEqual([signer.operator]);
    expect(
      verifyCredential(mintCredential(signer, claim), claim, loadOperatorKeys(line.slice('SETTLE_OPERATOR_KEYS='.length))),
    ).toMatchObject({ ok: true });
    fs.rmSync(project, { recursive: true, force: true });
  });
});
