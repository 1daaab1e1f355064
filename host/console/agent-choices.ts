// The presets and modes the console's create form offers, read from the API's own description
// (/openapi.json) so that the form offers what this service accepts; read once per process, with
// the known lists when the description cannot be read.
import type { Context } from 'hono';
import { type ApiFetch, apiRequest } from './api.ts';
import type { AgentChoices } from './views/actions.ts';

/**
 * What the create form offers when the API's description cannot be read: no preset to choose (the
 * API's default is taken; preset names live only in their entries, host/agents/presets/).
 */
const FALLBACK: AgentChoices = {
  presets: [],
  modes: ['native', 'code', 'both'],
};

type Schema = { $ref?: string; properties?: Record<string, { enum?: unknown[] }> };

/**
 * The presets and modes POST /v1/agents takes, from the API's own description (/openapi.json), so
 * the form offers what this service accepts; read once per process.
 */
let choices: Promise<AgentChoices> | undefined;
export const agentChoices = (fetch: ApiFetch, c: Context, apiKey: string): Promise<AgentChoices> => {
  choices ??= (async () => {
    const res = await apiRequest(fetch, c, apiKey, '/openapi.json');
    if (!res.ok) return FALLBACK;
    const doc = (await res.json()) as {
      paths?: Record<string, { post?: { requestBody?: { content?: Record<string, { schema?: Schema }> } } }>;
      components?: { schemas?: Record<string, Schema> };
    };
    let schema = doc.paths?.['/v1/agents']?.post?.requestBody?.content?.['application/json']?.schema;
    if (schema?.$ref !== undefined) schema = doc.components?.schemas?.[schema.$ref.split('/').pop() ?? ''];
    const list = (name: string, fallback: string[]) => {
      const values = schema?.properties?.[name]?.enum;
      return Array.isArray(values) && values.every((x) => typeof x === 'string') ? values : fallback;
    };
    return { presets: list('preset', FALLBACK.presets), modes: list('mode', FALLBACK.modes) };
  })().catch(() => {
    choices = undefined;
    return FALLBACK;
  });
  return choices;
};
