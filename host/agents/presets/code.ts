// The code preset: the standard preset's end capabilities, reached only through run_code's
// generated `tools.*` bindings (its default mode is code).
import { definePreset } from './define.ts';
import { standard } from './standard.ts';

export const code = definePreset({
  name: 'code',
  defaultMode: 'code',
  admits: standard.admits,
  adds: [],
});
