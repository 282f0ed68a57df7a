/** What `settle tools` does (declared in cli/main.ts): the catalog as published; the human-readable list adds spawn_subagent. */
export async function printTools(opts: { json: boolean }): Promise<void> {
  const { publishedCatalog } = await import('../core/tools/catalog');
  const tools = publishedCatalog();
  if (opts.json) {
    console.log(JSON.stringify(tools, null, 2));
    return;
  }
  const { spawnSubagentArgs, SPAWN_SUBAGENT } = await import('../core/capability/subagent');
  const { z } = await import('zod');
  // spawn_subagent is the trajectory workflow's own tool (it starts a child workflow): listed, not published to models.
  const spawn = z.toJSONSchema(spawnSubagentArgs(), { io: 'input' }) as Record<string, unknown>;
  const listed = [
    ...tools,
    {
      name: SPAWN_SUBAGENT,
      description: 'Starts a sub-agent: a child trajectory with a capability attenuated from this one (docs/spec.md).',
      parameters: spawn,
      'x-settle-level': 'workflow',
    },
  ];
  for (const t of listed) {
    const props = (t.parameters as { properties: Record<string, { type?: string }>; required?: string[] }).properties;
    const required = new Set((t.parameters as { required?: string[] }).required ?? []);
    const fields = Object.entries(props).map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${v.type ?? 'any'}`);
    console.log(`${t.name.padEnd(13)} ${t['x-settle-level']}  (${fields.join(', ')})\n${' '.repeat(18)}${t.description}\n`);
  }
}
