// The standard preset: the normal full coding-agent surface, as native tools.
import { definePreset } from './define.ts';

export const standard = definePreset({
  name: 'standard',
  defaultMode: 'native',
  admits: {
    allow: [
      'bash',
      'read',
      'read_image',
      'write',
      'edit',
      'glob',
      'grep',
      'job_list',
      'job_output',
      'job_kill',
      // Installed only with an isolate host, and offered only to agents created with `subagents: true`.
      'workflow',
      'ralph',
    ],
  },
  adds: [],
});
