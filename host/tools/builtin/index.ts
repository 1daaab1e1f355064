// The builtin sandbox tools, grouped the way the presets of seed 000 take them.

import type { ToolDefinition } from '../types.ts';
import { bashTool } from './bash.ts';
import { editTool } from './edit.ts';
import { jobKillTool, jobListTool, jobOutputTool } from './jobs.ts';
import { readImageTool } from './read-image.ts';
import { readTool } from './read.ts';
import { globTool, grepTool } from './search.ts';
import { strReplaceEditorTool } from './str-replace-editor.ts';
import { writeTool } from './write.ts';

export { bashTool, editTool, globTool, grepTool, jobKillTool, jobListTool, jobOutputTool, readImageTool, readTool, strReplaceEditorTool, writeTool };
export { sandboxOf, LIMITS } from './services.ts';

/** The standard preset's native sandbox tools, in catalog order. */
export const standardSandboxTools = (): ToolDefinition[] => [
  bashTool, readTool, readImageTool, writeTool, editTool, globTool, grepTool, jobListTool, jobOutputTool, jobKillTool,
];
