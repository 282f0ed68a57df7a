/**
 * The test run's on-call operator (their key comes from global-setup, as an operator's environment
 * provides it), and credentials they sign, for tests that act as the operator.
 */
import { mintCredential } from '../../activities/operator/operator-credentials';
import { generateOperatorKey, loadOperatorKeys, loadOperatorSigner, operatorKeysFromEnv } from '../../activities/operator/operator-keys';
import type { OperatorClaim, OperatorCredential } from '../../core/operator-credential';
import { TEST_OPERATOR } from './operator-name';
import type { SettleClient } from '../../client/index';

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

/**
 * The on-call operator's credential deciding the A3 call `key` that `trajectoryId` waits on, bound
 * to the call it shows (as `settle approve` signs it); `alter` changes the claim after that, to
 * make a credential for something else.
 */
export async function approval(
  settle: SettleClient,
  trajectoryId: string,
  key: string,
  decision: 'approve' | 'deny',
  reason: string,
  alter: Partial<Extract<OperatorClaim, { purpose: 'approve' }>> = {},
): Promise<OperatorCredential> {
  const claim = await settle.approvalClaim({ trajectoryId, key, decision, reason });
  return signed({ ...claim, ...alter } as OperatorClaim);
}

/** Someone with a well-formed key no worker holds (an orchestrator's self-made one). */
export function stranger(name = 'mallory') {
  const pair = generateOperatorKey(name);
  return { signer: loadOperatorSigner(pair.privateText), keys: loadOperatorKeys(pair.publicText) };
}
