// The catalog (seed 000) types some arguments `number` and others `integer`; a model reads the
// JSON Schema the service publishes, so each must say what the catalog says. A `number` the tool
// counts in whole units takes a fractional value rounded down.
import { describe, expect, it } from 'vitest';
import {
  bashTool,
  createGoalTool,
  jobOutputTool,
  readTool,
  strReplaceEditorTool,
  terminalReadTool,
  updateGoalTool,
} from '../../../host/tools/builtin/index.ts';
import { lspTool } from '../../../host/tools/builtin/lsp/tool.ts';
import type { ToolDefinition } from '../../../host/tools/types.ts';
import { ralphTool } from '../../../host/tools/workflow/tools.ts';

const ralph = ralphTool(
  Object.assign(
    async () => {
      throw new Error('not run');
    },
    { maxAgents: 1, maxConcurrentAgents: 1 },
  ),
);
const lsp = lspTool();

const typeOf = (tool: ToolDefinition, field: string): unknown =>
  (tool.parameters as { properties: Record<string, { type?: unknown; items?: { type?: unknown } }> })
    .properties[field]?.type;

/** Every argument the catalog types as `number`, by tool. */
const NUMBERS: [ToolDefinition, string[]][] = [
  [bashTool, ['timeoutMs']],
  [readTool, ['offset', 'limit']],
  [jobOutputTool, ['timeout_ms']],
  [createGoalTool, ['max_goal_rounds']],
  [updateGoalTool, ['revision', 'max_goal_rounds']],
  [ralph, ['maxRounds']],
  [terminalReadTool, ['offset', 'count']],
  [lsp, ['line', 'character']],
];

describe('numbers in the catalog', () => {
  it.each(NUMBERS.flatMap(([tool, fields]) => fields.map((f) => [tool.name, f, tool] as const)))(
    '%s.%s is shown as number',
    (_name, field, tool) => {
      expect(typeOf(tool, field)).toBe('number');
    },
  );

  it('arguments the catalog types as integer stay integer', () => {
    expect(typeOf(strReplaceEditorTool, 'insert_line')).toBe('integer');
    const range = (
      strReplaceEditorTool.parameters as { properties: { view_range: { items: { type: string } } } }
    ).properties.view_range;
    expect(range.items.type).toBe('integer');
    expect(
      strReplaceEditorTool.validateArguments({ command: 'insert', path: 'a', insert_line: 1.5, new_str: 'x' })
        .ok,
    ).toBe(false);
  });

  it('a fractional count is rounded down before the range checks', () => {
    const read = readTool.validateArguments({ file_path: 'a.txt', offset: 2.9, limit: 2.5 });
    expect(read).toEqual({ ok: true, value: { file_path: 'a.txt', offset: 2, limit: 2 } });
    const tooSmall = readTool.validateArguments({ file_path: 'a.txt', limit: 0.5 });
    expect(tooSmall.ok).toBe(false);
    expect(
      bashTool.validateArguments({ command: 'true', description: 'x', timeoutMs: 1500.7 }),
    ).toMatchObject({
      ok: true,
      value: { timeoutMs: 1500 },
    });
  });

  it('a fractional revision is accepted by the schema and never matches a revision', () => {
    expect(updateGoalTool.validateArguments({ goal_id: 'g1', revision: 1.5, action: 'pause' })).toMatchObject(
      {
        ok: true,
        value: { revision: 1.5 },
      },
    );
  });
});
