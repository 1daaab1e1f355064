// Presets (seed 000): which of the installed global tools an agent inherits, and its default
// presentation mode. A preset names tools; names the service has not installed (yet) are simply
// absent, so a preset never fails because an optional capability is missing.
import type { PresentationMode, Preset } from './types.ts';

const FS_SHELL = ['bash', 'read', 'read_image', 'write', 'edit', 'glob', 'grep'];
const JOBS = ['job_list', 'job_output', 'job_kill'];
/** Offered only to agents created with `subagents: true` (a condition on the tools themselves). */
const WORKFLOWS = ['workflow', 'ralph'];
const TERMINALS = [
  'terminal_list',
  'terminal_open',
  'terminal_read',
  'terminal_send',
  'terminal_signal',
  'terminal_close',
];

const TOOLS: Record<Preset, readonly string[]> = {
  /** The full coding surface: native fs/shell tools and background jobs. */
  standard: [...FS_SHELL, ...JOBS, ...WORKFLOWS],
  /** The same end capabilities, reached only through run_code's tools.* bindings. */
  code: [...FS_SHELL, ...JOBS, ...WORKFLOWS],
  /** One persistent PTY shell (`bash`, registered in this preset's own layer) and one combined editor. */
  minimal: ['bash', 'str_replace_editor'],
  /** standard + persistent terminals + runtime inspection and plugin tools (cordis_*) once installed. */
  creator: [...FS_SHELL, ...JOBS, ...WORKFLOWS, ...TERMINALS],
};

const DEFAULT_MODE: Record<Preset, PresentationMode> = {
  standard: 'native',
  code: 'code',
  minimal: 'native',
  creator: 'native',
};

/** Whether a preset inherits a global tool of this name. */
export const presetAdmits = (preset: Preset, name: string): boolean =>
  TOOLS[preset].includes(name) || (preset === 'creator' && name.startsWith('cordis_'));

export const presetToolNames = (preset: Preset): readonly string[] => TOOLS[preset];

export const defaultModeOf = (preset: Preset): PresentationMode => DEFAULT_MODE[preset];
