// Modules that dependencies load with themselves but that the service reaches only on paths it
// rarely or never takes, loaded at their first use instead (issue 33, warm start):
// - dockerode's BuildKit session (lib/session.js: gRPC and protobufjs, ~110 modules), used only by
//   an image build that asks for a session, which the service never does;
// - docker-modem's SSH transport (lib/ssh.js: ssh2 and asn1, ~30 modules), used only with an
//   ssh:// DOCKER_HOST;
// - @opentelemetry/api (~50 modules), which prom-client's default CPU metric requires for
//   exemplars, which the service does not turn on.
// Together ~190 of the ~970 modules a start loads. A load hook (module.registerHooks, in this
// thread) gives each of these files a stand-in at its first load: a function that forwards every
// call, or an object that forwards every property, to the real module, loaded at the first call or
// property read. Nothing else changes: the real module runs exactly as it would have, later.
// Installed by host/cli.ts before it imports the service; a process that does not install it (the
// tests, a bench) loads them all, as before.
import { createRequire, registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

/** How the stand-in forwards: a module exporting one function, or one exporting an object. */
type Shape = 'function' | 'object';

/** The deferred files, by the end of their URL, and the shape of what each exports. */
export const DEFERRED: ReadonlyMap<string, Shape> = new Map([
  ['/node_modules/dockerode/lib/session.js', 'function'],
  ['/node_modules/docker-modem/lib/ssh.js', 'function'],
  ['/node_modules/@opentelemetry/api/dist/index.cjs', 'object'],
]);

/** The stand-ins reach the real module through this (they are evaluated as CommonJS, not imported). */
const LOAD_REAL = Symbol.for('dsh-sandbox.deferred-modules.load');

/** URLs whose real module is being (or has been) loaded: the hook lets these through. */
const released = new Set<string>();

const shapeOf = (url: string): Shape | undefined => {
  if (!url.startsWith('file:') || released.has(url)) return undefined;
  for (const [suffix, shape] of DEFERRED) if (url.endsWith(suffix)) return shape;
  return undefined;
};

/** The real module at `url`: its stand-in leaves the require cache and the file is loaded as it is. */
const loadReal = (url: string): unknown => {
  released.add(url);
  const path = fileURLToPath(url);
  const require = createRequire(url);
  delete require.cache[path];
  return require(path);
};

/** CommonJS source of the stand-in for `url`. */
const standIn = (url: string, shape: Shape): string => {
  const real = `(() => { real ??= globalThis[Symbol.for(${JSON.stringify(LOAD_REAL.description)})](${JSON.stringify(url)}); return real; })`;
  if (shape === 'function')
    return `let real; const load = ${real};
module.exports = function deferred(...args) { return new.target ? Reflect.construct(load(), args, new.target) : Reflect.apply(load(), this, args); };`;
  return `let real; const load = ${real};
module.exports = new Proxy({}, {
  get: (_, key) => Reflect.get(load(), key),
  has: (_, key) => Reflect.has(load(), key),
  ownKeys: () => Reflect.ownKeys(load()),
  getOwnPropertyDescriptor: (_, key) => { const d = Reflect.getOwnPropertyDescriptor(load(), key); return d && { ...d, configurable: true }; },
});`;
};

let installed = false;

/** Installs the load hook for this thread (once; later calls do nothing). */
export function deferRarelyUsedModules(): void {
  if (installed) return;
  installed = true;
  (globalThis as Record<symbol, unknown>)[LOAD_REAL] = loadReal;
  registerHooks({
    load(url, context, nextLoad) {
      const shape = shapeOf(url);
      if (shape === undefined) return nextLoad(url, context);
      return { format: 'commonjs', source: standIn(url, shape), shortCircuit: true };
    },
  });
}
