/**
 * The operator keys of the gateway's worker: what it verifies `settle approve` and `settle
 * resolve` credentials with. Found as the CLI finds its signing key (cli/operator-key.ts):
 * SETTLE_OPERATOR_KEYS, plus the development key of a running `settle dev` (the CLI signs with
 * it when SETTLE_OPERATOR_KEY is unset), as `settle dev`'s own workers hold them.
 */
import { loadOperatorSigner, operatorKeysFromEnv, type OperatorKeys } from '../../activities/operator/operator-keys';
import { OPERATOR_KEYS_VARIABLE } from '../../activities/operator/key-variables';
import type { GatewayTool } from '../../activities/mcp/gateway-tools';
import { readDevSettings } from '../dev-settings';
import { devOperatorKeys } from '../operator-key';

/** The keys, or null when neither SETTLE_OPERATOR_KEYS nor a running `settle dev` gives any. */
export function gatewayOperatorKeys(): OperatorKeys | null {
  const devKeyFile = readDevSettings()?.operatorKeyFile;
  if (!devKeyFile) return operatorKeysFromEnv();
  return devOperatorKeys(loadOperatorSigner(`@${devKeyFile}`, devKeyFile));
}

/**
 * Without operator keys no credential can be verified: an A3 call would wait for an approval that
 * can never come, and an in-doubt call without a probe for a `settle resolve` that can never
 * land. Such tools are listed but not served (fail closed); the rest are served as usual.
 */
export function refuseOperatorTools(tools: Map<string, GatewayTool>): void {
  for (const [name, tool] of tools) {
    if (!tool.served || tool.level === 'A0' || (tool.level !== 'A3' && tool.probe)) continue;
    const why =
      tool.level === 'A3' ? 'A3: it needs `settle approve`' : `${tool.level} without a probe: an in-doubt call needs \`settle resolve\``;
    tools.set(name, {
      name,
      served: false,
      reason: `${why}, and this gateway holds no operator keys (set ${OPERATOR_KEYS_VARIABLE}, or run \`settle dev\`)`,
    });
  }
}
