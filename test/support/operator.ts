/**
 * The test run's on-call operator (their key comes from global-setup, as an operator's environment
 * provides it), and credentials they sign, for tests that act as the operator.
 */
import { mintCredential } from '../../activities/operator/operator-credentials';
import { generateOperatorKey, loadOperatorKeys, loadOperatorSigner, operatorKeysFromEnv } from '../../activities/operator/operator-keys';
import type { OperatorClaim, OperatorCredential } from '../../core/operator-credential';
import { TEST_OPERATOR } from './operator-name';

export { TEST_OPERATOR };

/** The on-call operator's signing key and the keys the workers verify with. */
export function onCall() {
  const signer = loadOperatorSigner(process.env.SETTLE_OPERATOR_KEY ?? '');
  return { signer, keys: operatorKeysFromEnv()! };
}

/** A credential signed by the on-call operator. */
export function signed(claim: OperatorClaim, nowMs = Date.now()): OperatorCredential {
  return mintCredential(onCall().signer, claim, nowMs);
}

export function approval(trajectoryId: string, key: string, decision: 'approve' | 'deny', reason: string): OperatorCredential {
  return signed({ purpose: 'approve', trajectoryId, key, decision, reason });
}

/** Someone with a well-formed key no worker holds (an orchestrator's self-made one). */
export function stranger(name = 'mallory') {
  const pair = generateOperatorKey(name);
  return { signer: loadOperatorSigner(pair.privateText), keys: loadOperatorKeys(pair.publicText) };
}
