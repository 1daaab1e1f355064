// Presets (seed 000): which of the installed global tools an agent inherits, and its default
// presentation mode. A preset names tools; names the service has not installed (yet) are simply
// absent, so a preset never fails because an optional capability is missing.
import type { PresentationMode, Preset } from './types.ts';

const FS_SHELL = ['bash', 'read', 'read_image', 'write', 'edit', 'glob', 'grep'];
const JOBS = ['job_list', 'job_output', 'job_kill'];

const TOOLS: Record<Preset, readonly string[]> = {
  /** The full coding surface: native fs/shell tools and background jobs. */
  standard: [...FS_SHELL, ...JOBS],
  /** The same end capabilities, reached only through run_code's tools.* bindings. */
  code: [...FS_SHELL, ...JOBS],
  /** One shell and one combined editor. */
  minimal: ['bash', 'str_replace_editor'],
  /** standard + runtime inspection and plugin tools (cordis_*, terminal_*) once installed. */
  creator: [...FS_SHELL, ...JOBS, 'terminal_open', 'terminal_write', 'terminal_read', 'terminal_close'],
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
