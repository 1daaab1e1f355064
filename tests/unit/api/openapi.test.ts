// /openapi.json (issue 17 §3) lints clean with Redocly's recommended rules (offline: the ruleset is
// bundled with @redocly/openapi-core) and documents what routes really answer: the shared errors
// (401, 404, 400, 413, 429, 503, 504), the bodies of PUT files and PUT archive, the terminal
// WebSocket (x-websockets), and the event-stream alternative of calls and events (x-event-stream).
import { BaseResolver, createConfig, lintDocument, makeDocumentFromString } from '@redocly/openapi-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { serviceDocument } from '../../../client/generate.ts';
import type { Loose } from './harness.ts';

let document: Loose;
beforeAll(async () => {
  document = await serviceDocument();
});

describe('/openapi.json', () => {
  it("lints clean with Redocly's recommended rules", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintDocument({
      document: makeDocumentFromString(JSON.stringify(document), 'openapi.json'),
      config,
      externalRefResolver: new BaseResolver(),
    });
    const found = problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer ?? ''}`);
    // No finding accepted: a licence is stated, and every operation names its client errors.
    expect(found).toEqual([]);
    expect(document.info.license.identifier).toBe('LicenseRef-UNLICENSED');
    expect(Object.keys(document.paths['/v1/health'].get.responses)).toContain('4XX');
    expect(Object.keys(document.paths['/metrics'].get.responses)).toEqual(
      expect.arrayContaining(['401', '403']),
    );
  });

  it('documents the errors each route really answers', () => {
    const codes = (path: string, method: string) =>
      Object.keys(document.paths[path][method].responses).sort();
    expect(codes('/v1/agents/{id}/calls', 'post')).toEqual(
      ['200', '400', '401', '404', '409', '413', '422', '429', '503'].sort(),
    );
    expect(codes('/v1/agents/{id}', 'get')).toEqual(['200', '401', '404', '429', '503', '504']);
    expect(codes('/v1/agents/{id}/files', 'put')).toEqual(['200', '400', '401', '404', '413', '429', '503']);
    expect(codes('/v1/tenants', 'post')).toContain('503');
    expect(document.components.responses.Unauthorized.headers['WWW-Authenticate']).toBeDefined();
    expect(document.components.responses.RateLimited.headers['Retry-After']).toBeDefined();
  });

  it('describes the bodies of PUT files and PUT archive, and what they answer', () => {
    const files = document.paths['/v1/agents/{id}/files'].put;
    expect(files.requestBody.content['application/octet-stream'].schema).toEqual({
      type: 'string',
      format: 'binary',
    });
    expect(files.responses['200'].content['application/json'].schema.required).toEqual(['path', 'bytes']);
    const archive = document.paths['/v1/agents/{id}/archive'].put;
    expect(archive.requestBody.content['application/x-tar'].schema.format).toBe('binary');
    expect(archive.responses['200'].content['application/json'].schema.required).toEqual(['files', 'bytes']);
  });

  it('describes the terminal WebSocket and the event streams beside what typed clients call', () => {
    const terminal = document['x-websockets']['/v1/agents/{id}/terminals/{tid}'];
    expect(terminal.responses['101']).toBeDefined();
    // The same path's DELETE (close the terminal) is an ordinary route and stays.
    expect(Object.keys(document.paths['/v1/agents/{id}/terminals/{tid}'])).toEqual(['delete']);
    const calls = document.paths['/v1/agents/{id}/calls'].post.responses['200'];
    expect(Object.keys(calls.content)).toEqual(['application/json']);
    expect(Object.keys(calls['x-event-stream'].events)).toEqual(['progress', 'results', 'error']);
    const events = document.paths['/v1/agents/{id}/events'].get.responses['200'];
    expect(Object.keys(events['x-event-stream'].events)).toEqual([
      'event',
      'deleted',
      'shutdown',
      'truncated',
    ]);
  });
});
