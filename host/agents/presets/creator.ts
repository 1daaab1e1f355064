// The creator preset: a full coding surface plus persistent terminals and, once installed, runtime
// inspection and plugin tools (cordis_*). It inherits every installed tool but the minimal preset's
// editor, so privileged tools the deployment installs reach this preset and no other.
import { definePreset } from './define.ts';

export const creator = definePreset({
  name: 'creator',
  defaultMode: 'native',
  admits: { deny: ['str_replace_editor'] },
  adds: [],
});
