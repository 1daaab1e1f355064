// client-py/dsh_sandbox/openapi.py is generated (client-py/generate.ts) and checked in; it must be
// exactly what the generator makes of the service's current /openapi.json, so the Python client's
// types cannot drift from the API; and its version is the service's, as the TypeScript client's is.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { generatePython, PY_GENERATED_PATH } from '../../../client-py/generate.ts';
import { VERSION } from '../../../host/serve.ts';

it('client-py/dsh_sandbox/openapi.py is what `node client-py/generate.ts` makes of the current API', async () => {
  const checkedIn = readFileSync(PY_GENERATED_PATH, 'utf8');
  const generated = await generatePython();
  expect(generated, 'run `node client-py/generate.ts` and commit the result').toBe(checkedIn);
  // Every error code and every operation of the document is there.
  expect(generated).toMatch(/^ErrorCode = Literal\[.*"NOT_FOUND".*\]$/m);
  expect(generated).toContain('"createAgent": ("POST", "/v1/agents"),');
  expect(generated).toMatch(/^ListRequestsResponseRequestsItem = Union\[/m);
});

it("the Python package's version is the service's, in pyproject.toml and in dsh_sandbox.__version__", () => {
  const root = new URL('../../../client-py/', import.meta.url);
  const pyproject = readFileSync(new URL('pyproject.toml', root), 'utf8');
  const init = readFileSync(new URL('dsh_sandbox/__init__.py', root), 'utf8');
  expect(/^version = "(.+)"$/m.exec(pyproject)?.[1]).toBe(VERSION);
  expect(/^__version__ = "(.+)"$/m.exec(init)?.[1]).toBe(VERSION);
});
