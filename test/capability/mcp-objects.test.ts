/**
 * MCP tools as capability objects (docs/mcp.md#capabilities): `mcp:<server>` grants every tool
 * of that server, `mcp:<server>/<tool>` one; names are compared exactly; attenuation never widens.
 */
import { describe, expect, it } from 'vitest';
import { attenuationVerdict, checkBody, objectContains, parseObject, type AccessRequest } from '../../core/capability/rules';
import { CapabilityBody, type CapabilityBody as Body } from '../../core/capability/token';

const HOUR = 3_600_000;

function body(objects: string[], rights: Body['rights'] = ['read', 'write']): Body {
  return CapabilityBody().parse({
    v: 1,
    kid: 'k1',
    aud: 'mcp-session',
    rights,
    objects,
    pred: { max_cost: 10, budget: 100 },
    exp: Date.now() + HOUR,
    parent: null,
    depth: 0,
  });
}

function request(server: string, tool: string, op: AccessRequest['op'] = 'write'): AccessRequest {
  return { op, target: { kind: 'mcp', server, tool }, cost: 1, audience: 'mcp-session', nowMs: Date.now() };
}

describe('mcp: objects', () => {
  it('grants one tool, or every tool of one server, and nothing else', () => {
    const one = body(['mcp:files/edit_file']);
    expect(checkBody(one, request('files', 'edit_file'))).toEqual({ allowed: true });
    expect(checkBody(one, request('files', 'write_file'))).toMatchObject({ allowed: false, component: 'objects' });
    expect(checkBody(one, request('memory', 'edit_file'))).toMatchObject({ allowed: false, component: 'objects' });
    const server = body(['mcp:files']);
    expect(checkBody(server, request('files', 'write_file'))).toEqual({ allowed: true });
    expect(checkBody(server, request('files-2', 'write_file'))).toMatchObject({ allowed: false, component: 'objects' });
  });

  it('compares tool names exactly: no prefix, no case folding, no path tricks', () => {
    expect(objectContains('mcp:files/edit', { kind: 'mcp', server: 'files', tool: 'edit_file' })).toBe(false);
    expect(objectContains('mcp:files/Edit_File', { kind: 'mcp', server: 'files', tool: 'edit_file' })).toBe(false);
    expect(checkBody(body(['mcp:files/edit_file']), request('files', 'edit_file/../write_file'))).toMatchObject({
      allowed: false,
      component: 'objects',
    });
  });

  it('never lets a path, host or repo object grant an MCP tool, nor an MCP object a path', () => {
    expect(checkBody(body(['path:/']), request('files', 'edit_file'))).toMatchObject({ allowed: false, component: 'objects' });
    expect(objectContains('mcp:files', { kind: 'path', path: '/files' })).toBe(false);
  });

  it('still needs the right: an A0 tool reads, any other writes', () => {
    expect(checkBody(body(['mcp:files'], ['read']), request('files', 'edit_file', 'write'))).toMatchObject({
      allowed: false,
      component: 'rights',
    });
    expect(checkBody(body(['mcp:files'], ['read']), request('files', 'read_text_file', 'read'))).toEqual({ allowed: true });
  });

  it('refuses malformed objects with a one-line rule', () => {
    expect(() => parseObject('mcp:Files/x')).toThrow(/be mcp:server or mcp:server\/tool/);
    expect(() => parseObject('mcp:files/a b')).toThrow(/be mcp:server or mcp:server\/tool/);
    expect(() => parseObject('mcp:')).toThrow(/be mcp:server or mcp:server\/tool/);
    expect(() => CapabilityBody().parse({ ...body(['mcp:a']), objects: ['mcpx:a'] })).toThrow(/typed object/);
  });

  it('attenuates a server down to one of its tools, never up or across', () => {
    const parent = body(['mcp:files/edit_file', 'mcp:memory']);
    const child = { aud: 'child', rights: ['write' as const], max_cost: 1, budget: 1, exp: Date.now() + 1000 };
    expect(attenuationVerdict(parent, { ...child, objects: ['mcp:memory/create_entities'] })).toEqual({ allowed: true });
    expect(attenuationVerdict(parent, { ...child, objects: ['mcp:files/edit_file'] })).toEqual({ allowed: true });
    expect(attenuationVerdict(parent, { ...child, objects: ['mcp:files'] })).toMatchObject({ allowed: false, component: 'objects' });
    expect(attenuationVerdict(parent, { ...child, objects: ['mcp:files/write_file'] })).toMatchObject({
      allowed: false,
      component: 'objects',
    });
  });
});
