// The builtin sandbox tools: each definition by name, and the catalog the service installs in its
// global layer. Which of them an agent gets is its preset's business (host/agents/presets/), not
// this module's: nothing here is grouped by preset. The session log and schedule tools need the
// store's search and the scheduler, so they are factories that host/agents/assemble.ts installs.

import type { ToolDefinition } from '../types.ts';
import { askUserQuestionTool } from './ask-user-question.ts';
import { bashTool } from './bash.ts';
import { editTool } from './edit.ts';
import { exitPlanModeTool } from './exit-plan-mode.ts';
import { createGoalTool, getGoalTool, updateGoalTool } from './goals.ts';
import { jobKillTool, jobListTool, jobOutputTool } from './jobs.ts';
import { createPersistentBashTool, persistentBashTool } from './persistent-bash.ts';
import { readTool } from './read.ts';
import { readImageTool } from './read-image.ts';

export {
  type ScheduleOwner,
  type ScheduleRequest,
  type ScheduleService,
  type ScheduleView,
  scheduleTools,
} from './schedules.ts';

import { globTool, grepTool } from './search.ts';

export {
  SESSION_LOG_LIMITS,
  type SessionAccess,
  type SessionLogPort,
  sessionLogTools,
} from './session-log.ts';

export {
  listSkills,
  SKILL_LISTING,
  SKILL_NAME,
  SKILLS_DIR,
  type SkillEntry,
  type SkillPort,
  skillTool,
} from './skill.ts';

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
import { todoWriteTool } from './todo-write.ts';

export {
  MAX_QUERIES,
  type WebCaller,
  type WebPage,
  type WebPort,
  type WebResults,
  webFetchTool,
  webSearchTool,
} from './web.ts';

import { writeTool } from './write.ts';

export { ScheduleShown } from './schedules.ts';
export { LIMITS, sandboxOf } from './services.ts';
export {
  type AskingCall,
  GOAL_ACTIONS,
  GOAL_STATES,
  Goal,
  type GoalAction,
  type GoalUpdate,
  type SessionService,
  sessionOf,
  TODO_LIMIT,
  Todo,
} from './session.ts';
export {
  askUserQuestionTool,
  bashTool,
  createGoalTool,
  createPersistentBashTool,
  editTool,
  exitPlanModeTool,
  getGoalTool,
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
  todoWriteTool,
  updateGoalTool,
  writeTool,
};

/**
 * Every builtin tool the service installs in its global layer, in catalog order. The persistent
 * `bash` is not among them: it shares the one-shot `bash`'s name, so only a preset can add it.
 */
export const builtinTools = (): ToolDefinition[] => [
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
  strReplaceEditorTool,
  ...terminalTools(),
  askUserQuestionTool,
  todoWriteTool,
  createGoalTool,
  getGoalTool,
  updateGoalTool,
  exitPlanModeTool,
];
