// The generated declarations are valid TypeScript and really type a program that uses them:
// compiled with the typescript compiler (createProgram over an in-memory host, full checking).
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { generateSdk } from '../../../sdk-gen/index.ts';
import { goldenCases } from './cases.ts';

const OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts'],
  types: [],
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
};

// Parsed lib files, shared by every program (parsing lib.es2022 dominates the cost).
const libCache = new Map<string, ts.SourceFile | undefined>();

/** Diagnostics for the declarations plus a script that uses them, as `line: message` strings. */
function check(declarations: string, program = ''): string[] {
  const files = new Map([
    ['/sdk.d.ts', declarations],
    ['/main.ts', program],
  ]);
  const host = ts.createCompilerHost(OPTIONS);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) => {
    const text = files.get(name);
    if (text !== undefined) return ts.createSourceFile(name, text, version);
    if (!libCache.has(name)) libCache.set(name, getSourceFile.call(host, name, version, ...rest));
    return libCache.get(name);
  };
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.readFile = (name) => files.get(name) ?? readFile.call(host, name);
  const built = ts.createProgram({ rootNames: [...files.keys()], options: OPTIONS, host });
  return ts.getPreEmitDiagnostics(built).map((diagnostic) => {
    const where = diagnostic.file?.fileName ?? '';
    const line =
      diagnostic.file && diagnostic.start !== undefined
        ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1
        : 0;
    return `${where}:${line}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}

const catalog = (goldenCases['catalog.d.ts'] as () => string)();

describe('generated declarations type-check', () => {
  for (const [name, render] of Object.entries(goldenCases)) {
    if (!name.endsWith('.d.ts')) continue;
    it(`${name} compiles without errors`, () => {
      expect(check(render())).toEqual([]);
    });
  }

  it('types the seed run_code example and the catalog tools', () => {
    const program = `
      async function main() {
        const files = await tools.glob({ pattern: '**/*.ts', path: 'packages/core' });
        const contents = await Promise.all(files.slice(0, 3).map((file_path) => tools.read({ file_path })));
        const first: string | undefined = contents[0];
        const hits = await tools.grep({ pattern: 'registerTool', include: '*.ts' });
        const line: number | undefined = hits[0]?.line;
        await tools.bash({ command: 'ls', description: 'List files', run_in_background: true });
        await tools.edit({ file_path: 'a.ts', old_string: 'a', new_string: 'b' });
        return { files, first, line };
      }
    `;
    expect(check(catalog, program)).toEqual([]);
  });

  it('rejects wrong arguments (the check is real)', () => {
    const program = `
      async function main() {
        await tools.read({ file_path: 1 });
        await tools.bash({ command: 'ls' });
        await tools.glob({ pattern: '*', extra: true });
        const text: number = await tools.read({ file_path: 'a' });
        await tools.nope({});
      }
    `;
    const errors = check(catalog, program);
    expect(errors).toHaveLength(5);
    expect(errors.every((error) => error.startsWith('/main.ts:'))).toBe(true);
  });

  it('types renamed bindings, recursive types and optional arguments', () => {
    const sdk = generateSdk([
      { name: 'mcp__x__do-it', description: '', parameters: { type: 'object', properties: {} } },
      {
        name: 'tree',
        description: '',
        parameters: {
          type: 'object',
          properties: { root: { $ref: '#/$defs/Node' } },
          required: ['root'],
          $defs: {
            Node: {
              type: 'object',
              properties: { kids: { type: 'array', items: { $ref: '#/$defs/Node' } } },
            },
          },
        },
      },
    ]).declarations;
    const program = `
      async function main() {
        await tools.mcp__x__do_it();
        await tools.tree({ root: { kids: [{ kids: [{}] }, {}] } });
      }
    `;
    expect(check(sdk, program)).toEqual([]);
    expect(check(sdk, 'tools.tree({ root: { kids: [{ kids: 1 }] } });')).toHaveLength(1);
  });
});
