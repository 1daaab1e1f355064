// Lists the functions of the runtime code longer than a limit (default 120 lines), longest first,
// nested functions included (a factory counts with the closures it holds): the measure of
// "no function over ~120 lines" (docs/architecture.md), which tests/unit/architecture/function-length.test.ts
// holds the code to. Run: `node scripts/long-functions.ts [lines]`.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOTS = ['host', 'sandbox-image', 'sandbox-wire', 'policies', 'sdk-gen', 'client'];
/** Generated code is not written by hand, so it is not held to the limit. */
const GENERATED = new Set(['client/openapi.ts']);
/** The functions of the runtime code longer than `limit` lines, longest first. */
export function longFunctions(limit = 120, root = '.'): Array<{ lines: number; where: string }> {
  const found: Array<{ lines: number; where: string }> = [];
  for (const folder of ROOTS) {
    for (const name of readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })) {
      const file = join(folder, name);
      if (!file.endsWith('.ts') || file.endsWith('.test.ts') || GENERATED.has(file)) continue;
      const text = readFileSync(join(root, file), 'utf8');
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node, owner: string | undefined): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
          const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
          const last = source.getLineAndCharacterOfPosition(node.end).line;
          const name = node.name?.getText() ?? owner ?? '(anonymous)';
          if (last - first + 1 > limit)
            found.push({ lines: last - first + 1, where: `${file}:${first + 1} ${name}` });
        }
        const next =
          ts.isVariableDeclaration(node) || ts.isPropertyAssignment(node) ? node.name.getText() : owner;
        ts.forEachChild(node, (child) => visit(child, next));
      };
      visit(source, undefined);
    }
  }
  return found.sort((a, b) => b.lines - a.lines);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const limit = Number(process.argv[2] ?? 120);
  const found = longFunctions(limit);
  for (const { lines, where } of found) process.stdout.write(`${lines} ${where}\n`);
  process.stdout.write(`${found.length} function(s) over ${limit} lines\n`);
}
