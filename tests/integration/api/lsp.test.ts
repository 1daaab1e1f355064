// The lsp tool on the composition `serve` runs, with a real container (issue 19): the language
// servers baked into the sandbox image (typescript-language-server, pyright) are started by sandboxd
// as the agent at the first query, and answer goToDefinition, findReferences, goToImplementation and
// hover in a small TypeScript project and a Python one, as workspace-relative path:line:col with the
// line's text; positions are 1-based both ways. Bad input gets a clear error.
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from './served.ts';

const service = served('lsp');

const FILES: Record<string, string> = {
  'ts/tsconfig.json':
    '{ "compilerOptions": { "strict": true, "module": "esnext", "moduleResolution": "bundler", "target": "es2022" } }\n',
  'ts/shapes.ts': [
    'export interface Shape {',
    '  area(): number;',
    '}',
    '',
    'export class Square implements Shape {',
    '  constructor(private readonly side: number) {}',
    '  area(): number {',
    '    return this.side * this.side;',
    '  }',
    '}',
    '',
  ].join('\n'),
  'ts/main.ts': [
    "import { type Shape, Square } from './shapes';",
    '',
    'const shapes: Shape[] = [new Square(2), new Square(3)];',
    'export const total = shapes.reduce((sum, s) => sum + s.area(), 0);',
    '',
  ].join('\n'),
  'py/greet.py': ['def greet(name: str) -> str:', '    return "hello " + name', ''].join('\n'),
  'py/app.py': ['from greet import greet', '', 'print(greet("world"))', 'print(greet("again"))', ''].join(
    '\n',
  ),
};

let seq = 0;
const lsp = async (server: Running, key: string, agentId: string, args: Record<string, unknown>) => {
  const res = await json(server, key, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [{ id: `l${++seq}`, name: 'lsp', arguments: args }],
  });
  expect(res.status).toBe(200);
  return res.json.results[0] as Loose;
};

it('answers definitions, references, implementations and hovers from servers in the container', async () => {
  const server = await service.start();
  const key = (await server.store.tenants.createTenant('lsp')).apiKey;
  const agentId = (await json(server, key, 'POST', '/v1/agents', {})).json.id as string;
  const ask = (operation: string, file_path: string, line: number, character: number) =>
    lsp(server, key, agentId, { operation, file_path, line, character });
  const tools = (await json(server, key, 'GET', `/v1/agents/${agentId}/tools`)).json.tools as Loose[];
  expect(tools.find((t) => t.name === 'lsp')?.description).toContain('1-based');
  for (const [path, content] of Object.entries(FILES)) {
    const res = await json(server, key, 'POST', `/v1/agents/${agentId}/calls`, {
      calls: [{ id: path, name: 'write', arguments: { file_path: path, content } }],
    });
    expect(res.json.results[0].ok).toBe(true);
  }

  // TypeScript: `Square` in main.ts line 3 (column 32) is defined in shapes.ts line 5.
  const definition = await ask('goToDefinition', 'ts/main.ts', 3, 32);
  expect(definition.ok).toBe(true);
  // The class, and (for `new`) its constructor.
  expect(definition.value.locations).toContainEqual({
    path: 'ts/shapes.ts',
    line: 5,
    character: 14,
    snippet: 'export class Square implements Shape {',
  });
  expect(definition.content[0].text).toContain('ts/shapes.ts:5:14: export class Square implements Shape {');

  // References of `area` declared in the interface: the declaration, the class's, and the call.
  const references = await ask('findReferences', 'ts/shapes.ts', 2, 3);
  expect(references.ok).toBe(true);
  const refs = (references.value.locations as Loose[]).map((l) => `${l.path}:${l.line}`);
  expect(refs).toEqual(expect.arrayContaining(['ts/shapes.ts:2', 'ts/main.ts:4']));

  // The implementations of the interface Shape: class Square.
  const implementation = await ask('goToImplementation', 'ts/shapes.ts', 1, 18);
  expect(implementation.ok).toBe(true);
  expect((implementation.value.locations as Loose[]).map((l) => `${l.path}:${l.line}`)).toContain(
    'ts/shapes.ts:5',
  );

  const hover = await ask('hover', 'ts/main.ts', 4, 14);
  expect(hover.ok).toBe(true);
  expect(hover.value.hover).toContain('const total: number');

  // Python (pyright): greet used in app.py line 3 is defined in greet.py line 1; two calls plus the import.
  const pyDefinition = await ask('goToDefinition', 'py/app.py', 3, 7);
  expect(pyDefinition.ok).toBe(true);
  expect(pyDefinition.value.locations).toEqual([
    { path: 'py/greet.py', line: 1, character: 5, snippet: 'def greet(name: str) -> str:' },
  ]);
  const pyReferences = await ask('findReferences', 'py/greet.py', 1, 5);
  const pyRefs = (pyReferences.value.locations as Loose[]).map((l) => `${l.path}:${l.line}`);
  expect(pyRefs).toEqual(expect.arrayContaining(['py/greet.py:1', 'py/app.py:3', 'py/app.py:4']));

  // An edit is seen by the next query (the document is updated, not reopened from a stale copy).
  await json(server, key, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [
      { id: 'e', name: 'write', arguments: { file_path: 'py/app.py', content: `\n\n${FILES['py/app.py']}` } },
    ],
  });
  const moved = await ask('goToDefinition', 'py/app.py', 5, 7);
  expect(moved.value.locations[0]).toMatchObject({ path: 'py/greet.py', line: 1 });

  // Clear errors: an unknown language, a line past the end, a path outside the workspace.
  const errors = [
    await ask('hover', 'ts/tsconfig.json', 1, 1),
    await ask('hover', 'ts/main.ts', 99, 1),
    await ask('hover', '../etc/passwd.py', 1, 1),
    await ask('hover', 'ts/main.ts', 0, 1),
  ].map((r) => r.error?.code);
  expect(errors).toEqual([
    'INVALID_ARGUMENTS',
    'INVALID_ARGUMENTS',
    'PATH_OUTSIDE_WORKSPACE',
    'INVALID_ARGUMENTS',
  ]);

  // The servers run in the container as the agent.
  const ps = await json(server, key, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [
      {
        id: 'ps',
        name: 'bash',
        arguments: {
          command: 'ps -o user=,args= -e | grep -E "language|langserver" | grep -v grep',
          description: 'ps',
        },
      },
    ],
  });
  const text = ps.json.results[0].content[0].text as string;
  expect(text).toMatch(/typescript-language-server/);
  expect(text).toMatch(/pyright/);
  for (const line of text.split('\n').filter((l: string) => /language|langserver/.test(l)))
    expect(line).toMatch(/^(agent|1000)\s/);
}, 300_000);
