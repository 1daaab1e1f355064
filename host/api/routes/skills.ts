// The tenant's skill catalog over HTTP: PUT /v1/skills/:name takes an uncompressed tar of a skill
// package (SKILL.md with front matter at its root, or under one top folder) and stores it, replacing
// the skill of that name; GET lists the catalog or reads one skill with its file list; DELETE
// removes one. Every route is the caller's tenant's: another tenant's skill reads as NOT_FOUND.
// The upload is spooled and checked whole (hostile names, links, sizes) before anything is stored.
import { Readable } from 'node:stream';
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import { SandboxError } from '../../errors.ts';
import type { SkillCatalog } from '../../skills/catalog.ts';
import { SKILL_NAME } from '../../tools/builtin/index.ts';
import { jsonResponse, uploadBody } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, SkillDetail, SkillList } from '../schemas.ts';

const nameParam = {
  name: 'name',
  in: 'path' as const,
  required: true,
  schema: { type: 'string' as const, pattern: SKILL_NAME.source },
  description: "The skill's name, as its SKILL.md front matter gives it",
};

const noSkill = (name: string): SandboxError =>
  new SandboxError('NOT_FOUND', `No skill ${JSON.stringify(name.slice(0, 80))}; GET /v1/skills lists them.`);

export const skillRoutes = (skills: SkillCatalog): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  // The tar is spooled, never held whole; a little room over the content limit is for its headers.
  const maxTarBytes = skills.limits.maxBytes + 1024 * skills.limits.maxFiles * 2 + 64 * 1024;
  app.get(
    '/v1/skills',
    describeRoute({
      operationId: 'listSkills',
      tags: ['skills'],
      description: "The tenant's skills by name; each agent's `skill` tool lists them.",
      responses: { 200: jsonResponse('Skills', SkillList) },
    }),
    async (c) => c.json({ skills: await skills.summaries(c.get('tenant').id) }),
  );
  app.get(
    '/v1/skills/:name',
    describeRoute({
      operationId: 'getSkill',
      tags: ['skills'],
      parameters: [nameParam],
      responses: {
        200: jsonResponse('The skill and its files', SkillDetail),
        404: jsonResponse('No such skill', ErrorBody),
      },
    }),
    async (c) => {
      const name = c.req.param('name');
      const skill = await skills.get(c.get('tenant').id, name);
      if (skill === undefined) throw noSkill(name);
      return c.json(skill);
    },
  );
  app.put(
    '/v1/skills/:name',
    describeRoute({
      operationId: 'putSkill',
      tags: ['skills'],
      description:
        'Stores a skill package (an uncompressed tar: SKILL.md with name and description front matter at its root or under one top folder, and any other files), replacing the skill of that name.',
      parameters: [nameParam],
      requestBody: { content: { 'application/x-tar': {} } },
      responses: {
        200: jsonResponse('Replaced', SkillDetail),
        201: jsonResponse('Created', SkillDetail),
        400: jsonResponse('Refused package', ErrorBody),
      },
    }),
    async (c) => {
      if (c.req.raw.body === null) throw new SandboxError('BAD_REQUEST', 'Send the tar as the request body.');
      const body = uploadBody(c.req.raw, maxTarBytes);
      try {
        const tar = Readable.from(body, { objectMode: false });
        const { skill, created } = await skills.upload(c.get('tenant').id, c.req.param('name'), tar);
        return c.json(skill, created ? 201 : 200);
      } catch (error) {
        await body.drain();
        throw error;
      }
    },
  );
  app.delete(
    '/v1/skills/:name',
    describeRoute({
      operationId: 'deleteSkill',
      tags: ['skills'],
      parameters: [nameParam],
      responses: { 204: { description: 'Deleted' }, 404: jsonResponse('No such skill', ErrorBody) },
    }),
    async (c) => {
      const name = c.req.param('name');
      if (!(await skills.delete(c.get('tenant').id, name))) throw noSkill(name);
      return c.body(null, 204);
    },
  );
  return app;
};
