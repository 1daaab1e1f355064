// Model-facing names of MCP tools: mcp__<server>__<tool>, only [A-Za-z0-9_-], at most 64 characters,
// long names kept apart by a hash of the server's own name, and collisions refused, never shadowed.
import { describe, expect, it } from 'vitest';
import { MAX_TOOL_NAME, mcpToolName, NameMap } from '../../../host/mcp-servers/names.ts';

describe('MCP tool names', () => {
  it('prefixes, replaces what model APIs refuse, and stays within 64 characters', () => {
    expect(mcpToolName('everything', 'get-sum')).toBe('mcp__everything__get-sum');
    expect(mcpToolName('fs', 'read.file/v2 ü')).toBe('mcp__fs__read_file_v2__');
    const long = mcpToolName('server', 'x'.repeat(200));
    expect(long.length).toBe(MAX_TOOL_NAME);
    expect(long).toMatch(/^mcp__server__x+_[0-9a-f]{8}$/);
    expect(mcpToolName('server', `${'x'.repeat(100)}a`)).not.toBe(
      mcpToolName('server', `${'x'.repeat(100)}b`),
    );
    expect(mcpToolName('s', '')).toMatch(/^mcp__s___[0-9a-f]{8}$/);
  });

  it('refuses a tool whose name would collide with an earlier one', () => {
    const map = new NameMap('s');
    expect(map.add('a.b')).toEqual({ name: 'mcp__s__a_b' });
    expect(map.add('a_b')).toEqual({ collidesWith: 'a.b' });
    expect(map.toolOf('mcp__s__a_b')).toBe('a.b');
  });
});
