// The presets an agent may be created from, one entry file each in this folder. Adding a preset is
// adding its entry file and listing it here; the API's `preset` values, the default modes and
// the preset layers of the registry are all derived from this list.
import { SandboxError } from '../../errors.ts';
import type { PresentationMode } from '../../tools/index.ts';
import { code } from './code.ts';
import { creator } from './creator.ts';
import type { PresetEntry } from './define.ts';
import { minimal } from './minimal.ts';
import { standard } from './standard.ts';

export { admitsTool, definePreset, type PresetEntry } from './define.ts';

/** In the order the API documents them. */
const ENTRIES = [standard, code, minimal, creator] as const;

export type Preset = (typeof ENTRIES)[number]['name'];

export const PRESETS: readonly Preset[] = ENTRIES.map((entry) => entry.name);

/** The preset of an agent created without one. */
export const DEFAULT_PRESET: Preset = standard.name;

const BY_NAME = new Map<string, PresetEntry<Preset>>(ENTRIES.map((entry) => [entry.name, entry]));

export const presetEntry = (preset: Preset): PresetEntry<Preset> => {
  const entry = BY_NAME.get(preset);
  if (entry === undefined)
    throw new SandboxError(
      'CONFIG_INVALID',
      `Unknown preset ${JSON.stringify(preset)}; use one of ${PRESETS.join(', ')}.`,
    );
  return entry;
};

export const defaultModeOf = (preset: Preset): PresentationMode => presetEntry(preset).defaultMode;
