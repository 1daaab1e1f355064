// The minimal preset: one persistent PTY shell and one combined editor, both its own (its `bash`
// is not the global one-shot `bash`), and nothing inherited.
import { persistentBashTool, strReplaceEditorTool } from '../../tools/builtin/index.ts';
import { definePreset } from './define.ts';

export const minimal = definePreset({
  name: 'minimal',
  defaultMode: 'native',
  admits: { allow: [] },
  adds: [persistentBashTool, strReplaceEditorTool],
});
