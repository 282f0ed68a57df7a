/**
 * settle lint over an upstream's tools/list at every gateway start. A third-party server's
 * findings are the same at every start and not the operator's to fix, so the log gets one line
 * (counts, the tools concerned); each finding only on request (`--lint-details`), or from
 * `settle lint --mcp`. Findings never reach the model.
 */
import { errorMessage } from '../../core/errors';
import { formatFinding, lintDocument } from '../../workbench/lint/index';
import type { Finding } from '../../workbench/lint/types';
import type { UpstreamTool } from '../../activities/mcp/upstream';

/** Tools named in the summary line; the rest are counted. */
const NAMED_TOOLS = 5;

export function lintUpstream(listed: readonly UpstreamTool[], server: string, details: boolean, log: (line: string) => void): void {
  const prefix = `settle mcp lint (${server}):`;
  let findings: Finding[];
  try {
    findings = lintDocument({ tools: listed }).findings;
  } catch (err) {
    log(`${prefix} could not lint the upstream's tools: ${errorMessage(err)}`);
    return;
  }
  if (findings.length === 0) return;
  if (details) {
    for (const f of findings) log(`${prefix} ${formatFinding(f)}`);
    return;
  }
  log(`${prefix} ${summary(findings)}`);
}

function summary(findings: readonly Finding[]): string {
  const count = (severity: Finding['severity'], word: string) => {
    const n = findings.filter((f) => f.severity === severity).length;
    return n === 0 ? null : `${n} ${word}${n === 1 ? '' : 's'}`;
  };
  const counts = [count('error', 'error'), count('warning', 'warning'), count('info', 'note')].filter(Boolean).join(', ');
  const tools = [...new Set(findings.map((f) => f.tool))];
  const named = tools.slice(0, NAMED_TOOLS).join(', ') + (tools.length > NAMED_TOOLS ? ` and ${tools.length - NAMED_TOOLS} more` : '');
  return `${counts} in ${named} (each finding: --lint-details, or settle lint --mcp)`;
}
