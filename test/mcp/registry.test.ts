/** The gateway operator's registry (core/mcp/registry.ts): levels, defaults, probes and one-line errors. */
import { describe, expect, it } from 'vitest';
import { parseMcpRegistry, policyFor, probeArguments, probeVerdict } from '../../core/mcp/registry';

const PROBE = { tool: 'read_text_file', args: { path: { from: '/path' }, head: { value: 5 } }, applied_if_contains: '/edits/0/newText' };
const registry = (tools: unknown) => JSON.stringify({ server: 'files', tools });

describe('parseMcpRegistry', () => {
  it('takes levels from the registry and makes every unlisted tool A2, whatever the server says', () => {
    const r = parseMcpRegistry(registry({ read_text_file: { level: 'A0' }, edit_file: { level: 'A2', probe: PROBE } }));
    expect(policyFor(r, 'read_text_file')).toEqual({ level: 'A0', probe: null, listed: true });
    expect(policyFor(r, 'edit_file')).toMatchObject({ level: 'A2', listed: true, probe: { otherwise: 'unknown' } });
    expect(policyFor(r, 'write_file')).toEqual({ level: 'A2', probe: null, listed: false });
  });

  it('refuses bad input with one line naming the field and the rule', () => {
    expect(() => parseMcpRegistry('{')).toThrow(/^the registry must be JSON/);
    expect(() => parseMcpRegistry(JSON.stringify({ server: 'Files' }))).toThrow(/the registry\.server must be lower-case/);
    expect(() => parseMcpRegistry(registry({ x: { level: 'A9' } }))).toThrow(/the registry\.tools\.x\.level must/);
    expect(() => parseMcpRegistry(registry({ x: { level: 'A2', readOnly: true } }))).toThrow(/the registry\.tools\.x/);
    // A probe must be a tool the operator calls read-only.
    expect(() => parseMcpRegistry(registry({ edit_file: { level: 'A2', probe: PROBE } }))).toThrow(
      /tools\.edit_file\.probe\.tool must name a tool the registry lists as A0 \(read_text_file is not\)/,
    );
    expect(() => parseMcpRegistry(registry({ read_text_file: { level: 'A0', probe: PROBE } }))).toThrow(
      /tools\.read_text_file\.probe must be absent on an A0 tool/,
    );
  });
});

describe('the probe', () => {
  const r = parseMcpRegistry(
    registry({ read_text_file: { level: 'A0' }, edit_file: { level: 'A2', probe: { ...PROBE, otherwise: 'not_applied' } } }),
  );
  const spec = policyFor(r, 'edit_file').probe!;
  const call = { path: '/w/a.txt', edits: [{ oldText: 'count:', newText: 'count:I' }] };

  it("builds the probe tool's arguments from the call's and literals", () => {
    expect(probeArguments(spec, call)).toEqual({ path: '/w/a.txt', head: 5 });
    expect(() => probeArguments(spec, { edits: [] })).toThrow(/probe\.args\.path must point at a value/);
  });

  it("decides from the probe's text; an error or an undecidable call is unknown", () => {
    expect(probeVerdict(spec, call, { text: 'count:I\n', isError: false }).verdict).toBe('applied');
    expect(probeVerdict(spec, call, { text: 'count:\n', isError: false }).verdict).toBe('not_applied');
    expect(probeVerdict(spec, call, { text: 'count:I\n', isError: true }).verdict).toBe('unknown');
    expect(probeVerdict(spec, { path: '/w/a.txt', edits: [] }, { text: 'count:I', isError: false }).verdict).toBe('unknown');
    const cautious = policyFor(
      parseMcpRegistry(registry({ read_text_file: { level: 'A0' }, edit_file: { level: 'A2', probe: PROBE } })),
      'edit_file',
    );
    expect(probeVerdict(cautious.probe!, call, { text: 'count:\n', isError: false }).verdict).toBe('unknown');
  });
});
