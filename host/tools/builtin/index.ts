// The builtin sandbox tools, grouped the way the presets of seed 000 take them.

import type { ToolDefinition } from '../types.ts';
import { bashTool } from './bash.ts';
import { editTool } from './edit.ts';
import { jobKillTool, jobListTool, jobOutputTool } from './jobs.ts';
import { createPersistentBashTool, persistentBashTool } from './persistent-bash.ts';
import { readTool } from './read.ts';
import { readImageTool } from './read-image.ts';
import { globTool, grepTool } from './search.ts';
import { strReplaceEditorTool } from './str-replace-editor.ts';
import {
  terminalCloseTool,
  terminalListTool,
  terminalOpenTool,
  terminalReadTool,
  terminalSendTool,
  terminalSignalTool,
  terminalTools,
} from './terminal.ts';
import { writeTool } from './write.ts';

export { LIMITS, sandboxOf } from './services.ts';
export {
  bashTool,
  createPersistentBashTool,
  editTool,
  globTool,
  grepTool,
  jobKillTool,
  jobListTool,
  jobOutputTool,
  persistentBashTool,
  readImageTool,
  readTool,
  strReplaceEditorTool,
  terminalCloseTool,
  terminalListTool,
  terminalOpenTool,
  terminalReadTool,
  terminalSendTool,
  terminalSignalTool,
  terminalTools,
  writeTool,
};

/** The standard preset's native sandbox tools, in catalog order. */
export const standardSandboxTools = (): ToolDefinition[] => [
  bashTool,
  readTool,
  readImageTool,
  writeTool,
  editTool,
  globTool,
  grepTool,
  jobListTool,
  jobOutputTool,
  jobKillTool,
];
