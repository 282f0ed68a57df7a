/**
 * Fault injection for the chaos suite (chaos/, test/chaos): stop or kill a real worker process at
 * an exact point of an effect. Driven only by the environment variable
 *
 *   SETTLE_FAILPOINTS="file_edit.before_rename=kill,file_edit.after_rename=sleep:5000,settled.before_intent=stop@0.2"
 *
 * Actions: `kill` (SIGKILL this process: no cleanup, no completion, like a crashed host),
 * `stop` (SIGSTOP this process: a paused executor — a "zombie" — that resumes where it stopped
 * when someone sends SIGCONT) and `sleep:<ms>`. `@<p>` fires with probability p (0 < p ≤ 1).
 * Unset (always, in production) every failpoint is a no-op.
 *
 * The points, in the order an execution passes them:
 *   settled.before_intent            planned; not yet claimed (the claim records the intent)
 *   settled.after_claim              claimed with its intent; execution not started
 *   file_edit.before_rename          temporary file written, nothing changed yet
 *   file_edit.after_lease_check      lease checked, rename (the effect) not yet done
 *   file_edit.after_rename           effect done, not yet recorded
 *   bash_execute.after_lease_check   lease checked, no start row yet, command not started
 *   bash_execute.after_start         start row committed, command spawned and running
 *   bash_execute.after_run           command finished, exit marker written, not yet recorded
 *   settled.after_execute            any tool's execute returned (effect done), not yet recorded
 *   mcp.before_call                  the MCP gateway's lease checked, the upstream tools/call not yet sent
 *   mcp.after_call                   the upstream answered the tools/call (its effect done), not yet recorded
 *   probe.after_answer               a probe answered and applied its verdict, not yet returned
 */
type Action = { kind: 'kill' } | { kind: 'stop' } | { kind: 'sleep'; ms: number };

const spec = parse(process.env.SETTLE_FAILPOINTS ?? '');

export async function failpoint(name: string): Promise<void> {
  const point = spec.get(name);
  if (!point || Math.random() >= point.probability) return;
  // Said before acting (stderr to a pipe is synchronous), so the chaos suite knows which point fired.
  if (point.action.kind !== 'sleep') process.stderr.write(`settle failpoint: ${name} → ${point.action.kind}\n`);
  switch (point.action.kind) {
    case 'kill':
      process.kill(process.pid, 'SIGKILL');
      await new Promise(() => {}); // never resumes
      return;
    case 'stop':
      // Synchronous: the process stops here and continues on SIGCONT, as a paused VM or a long GC would.
      process.kill(process.pid, 'SIGSTOP');
      return;
    case 'sleep':
      await new Promise((r) => setTimeout(r, (point.action as { ms: number }).ms));
  }
}

function parse(text: string): Map<string, { action: Action; probability: number }> {
  const points = new Map<string, { action: Action; probability: number }>();
  for (const entry of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const match = /^([a-z_.]+)=(kill|stop|sleep:\d+)(?:@(0?\.\d+|1(?:\.0*)?))?$/.exec(entry);
    if (!match) {
      throw new Error(`SETTLE_FAILPOINTS: "${entry}" must be name=kill, name=stop or name=sleep:<ms>, optionally @<probability>`);
    }
    const [, name, action, probability] = match as unknown as [string, string, string, string | undefined];
    points.set(name, {
      action: action.startsWith('sleep:') ? { kind: 'sleep', ms: Number(action.slice(6)) } : { kind: action as 'kill' | 'stop' },
      probability: probability === undefined ? 1 : Number(probability),
    });
  }
  return points;
}
