// Tool names → bindings: deterministic, collision-free, and independent of input order.
import { describe, expect, it } from 'vitest';
import { generateSdk } from '../../../sdk-gen/index.ts';
import {
  bindToolNames,
  isBindableIdentifier,
  propertyKey,
  toIdentifier,
  toPascal,
} from '../../../sdk-gen/names.ts';
import { nameTools } from './fixtures/names.ts';

describe('toIdentifier', () => {
  it('replaces invalid characters and prefixes leading digits, reserved words and the empty name', () => {
    expect(toIdentifier('mcp__github__create-issue')).toBe('mcp__github__create_issue');
    expect(toIdentifier('1tool')).toBe('_1tool');
    expect(toIdentifier('delete')).toBe('_delete');
    expect(toIdentifier('await')).toBe('_await');
    expect(toIdentifier('__proto__')).toBe('___proto__');
    expect(toIdentifier('')).toBe('_');
    expect(toIdentifier('ünï')).toBe('_n_');
    expect(toIdentifier('$ok')).toBe('$ok');
  });

  it('agrees with isBindableIdentifier', () => {
    for (const name of ['a', 'A_1', '$', '_', 'class', '9', 'a-b', 'eval', 'tools']) {
      expect(isBindableIdentifier(toIdentifier(name))).toBe(true);
    }
  });
});

describe('bindToolNames', () => {
  it('maps the fixture names (the binding shim routes calls with this table)', () => {
    expect(bindToolNames(nameTools.map((tool) => tool.name))).toEqual([
      { tool: 'mcp__github__create-issue', binding: 'mcp__github__create_issue_2' },
      { tool: 'mcp__github__create_issue', binding: 'mcp__github__create_issue' },
      { tool: '1tool', binding: '_1tool' },
      { tool: 'delete', binding: '_delete' },
      { tool: 'class', binding: '_class' },
      { tool: 'read.file', binding: 'read_file_3' },
      { tool: 'read-file', binding: 'read_file_2' },
      { tool: 'read file', binding: 'read_file' },
      { tool: 'readFile', binding: 'readFile' },
      { tool: 'ünïcode', binding: '_n_code' },
      { tool: '', binding: '_' },
      { tool: '__proto__', binding: '___proto__' },
      { tool: '$dollar', binding: '$dollar' },
    ]);
  });

  it('gives every tool the same binding whatever the input order', () => {
    const names = nameTools.map((tool) => tool.name);
    const forward = new Map(bindToolNames(names).map((entry) => [entry.tool, entry.binding]));
    const backward = new Map(bindToolNames([...names].reverse()).map((entry) => [entry.tool, entry.binding]));
    expect(backward).toEqual(forward);
  });

  it('never renames a tool whose name is already an identifier, and skips taken suffixes', () => {
    expect(bindToolNames(['a-b', 'a_b', 'a_b_2'])).toEqual([
      { tool: 'a-b', binding: 'a_b_3' },
      { tool: 'a_b', binding: 'a_b' },
      { tool: 'a_b_2', binding: 'a_b_2' },
    ]);
  });

  it('binds a repeated name once', () => {
    expect(bindToolNames(['x', 'x'])).toEqual([{ tool: 'x', binding: 'x' }]);
  });

  it('is what generateSdk reports, and the bindings are the declared methods', () => {
    const sdk = generateSdk(nameTools);
    expect(sdk.names).toEqual(bindToolNames(nameTools.map((tool) => tool.name)));
    for (const { binding } of sdk.names) expect(sdk.declarations).toContain(`\n  ${binding}(args`);
  });

  it('keeps the first of repeated tools in generateSdk', () => {
    const parameters = { type: 'object', properties: {} };
    const sdk = generateSdk([
      { name: 'x', description: 'first', parameters },
      { name: 'x', description: 'second', parameters },
    ]);
    expect(sdk.names).toEqual([{ tool: 'x', binding: 'x' }]);
    expect(sdk.declarations).toContain('first');
    expect(sdk.declarations).not.toContain('second');
  });
});

describe('toPascal and propertyKey', () => {
  it('builds type-name stems', () => {
    expect(toPascal('mcp__github__create_issue')).toBe('McpGithubCreateIssue');
    expect(toPascal('readFile')).toBe('ReadFile');
    expect(toPascal('_1tool')).toBe('T1tool');
    expect(toPascal('_')).toBe('T');
  });

  it('quotes keys that are not identifiers', () => {
    expect(propertyKey('file_path')).toBe('file_path');
    expect(propertyKey('delete')).toBe('delete');
    expect(propertyKey('a-b')).toBe('"a-b"');
    expect(propertyKey('')).toBe('""');
    expect(propertyKey('say "hi"')).toBe('"say \\"hi\\""');
  });
});
