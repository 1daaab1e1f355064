// The creator preset (seed 000 "The Creator preset"): the standard surface plus persistent
// terminals and the seven privileged cordis_* tools (runtime inspection and model-written plugins),
// as an explicit list like every other preset, so a tool the service installs later reaches no
// creator agent until it is named here. Names not installed yet (cordis_* before the plugin host is
// wired) are simply absent.
import { definePreset } from './define.ts';
import { standard } from './standard.ts';

const TERMINALS = [
  'terminal_list',
  'terminal_open',
  'terminal_read',
  'terminal_send',
  'terminal_signal',
  'terminal_close',
] as const;

const CORDIS = [
  'cordis_inspect_list',
  'cordis_inspect_query',
  'cordis_inspect_self',
  'cordis_define',
  'cordis_run',
  'cordis_stop',
  'cordis_undefine',
] as const;

export const creator = definePreset({
  name: 'creator',
  defaultMode: 'native',
  admits: { allow: [...(standard.admits.allow ?? []), ...TERMINALS, ...CORDIS] },
  adds: [],
});
