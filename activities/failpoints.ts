/**
 * Fault injection for the chaos suite (test/chaos): kill a real worker process at an exact
 * point of an effect. Driven only by the environment variable
 *
 *   SETTLE_FAILPOINTS="file_edit.before_rename=kill,file_edit.after_rename=sleep:5000"
 *
 * Actions: `kill` (SIGKILL this process: no cleanup, no completion, like a crashed host) and
 * `sleep:<ms>`. Unset (always, in production) every failpoint is a no-op.
 */
const spec = parse(process.env.SETTLE_FAILPOINTS ?? '');

export async function failpoint(name: string): Promise<void> {
  const action = spec.get(name);
  if (!action) return;
  if (action === 'kill') {
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => {}); // never resumes
  }
  const ms = Number(action.slice('sleep:'.length));
  await new Promise((r) => setTimeout(r, ms));
}

function parse(text: string): Map<string, string> {
  const points = new Map<string, string>();
  for (const entry of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, action] = entry.split('=');
    if (!name || !action || !(action === 'kill' || /^sleep:\d+$/.test(action))) {
      throw new Error(`SETTLE_FAILPOINTS: "${entry}" must be name=kill or name=sleep:<ms>`);
    }
    points.set(name, action);
  }
  return points;
}
