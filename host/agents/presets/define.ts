// What a preset is (seed 000 "Presets"): a named tier of tools an agent is created from. A preset is
// data, one entry file per preset in this folder, listed by ./index.ts; the registry runtime
// (../runtime.ts) turns an entry into the preset's layer of the registry, and nothing else lists a
// preset's tools. A preset never fails because an optional capability is missing: names it admits
// that the service has not installed are simply absent.
import type { PresentationMode, Restriction, ToolDefinition } from '../../tools/index.ts';

export interface PresetEntry<Name extends string = string> {
  /** The name clients pass as `preset`. */
  readonly name: Name;
  /** The presentation mode of an agent created without one. */
  readonly defaultMode: PresentationMode;
  /**
   * Which of the tools installed in the global layer the preset inherits: only these names
   * (`allow`), or all but these (`deny`). Applied as the preset layer's restriction mask.
   */
  readonly admits: Restriction;
  /**
   * Definitions registered in the preset's own layer, in this order: they shadow a global tool of
   * the same name and stay visible whatever `admits` says.
   */
  readonly adds: readonly ToolDefinition[];
}

/** Keeps the entry's name a literal type, so the preset names are derived from the entries. */
export const definePreset = <const Name extends string>(entry: PresetEntry<Name>): PresetEntry<Name> => entry;

/** Whether the preset inherits the installed global tool `name`. */
export const admitsTool = (entry: PresetEntry, name: string): boolean =>
  entry.admits.allow !== undefined ? entry.admits.allow.includes(name) : !entry.admits.deny.includes(name);
