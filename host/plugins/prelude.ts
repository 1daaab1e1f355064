// The only code that runs in a plugin's isolate before the plugin: a small Cordis-shaped runtime.
// It evaluates the package's host body (a plain function body that returns the plugin), applies
// the plugin with a context, and answers the worker's entries. The context is the subset of
// Cordis (@cordisjs/core 3.x) a plugin uses, with Cordis' semantics:
//   ctx.on(name, fn, prepend?) / once → a dispose function; ctx.off(name, fn); ctx.emit (sync,
//   a listener's throw reaches the emitter); ctx.parallel (awaits all); ctx.serial (async, first
//   non-nullish result); ctx.bail (its sync form); ctx.effect(execute) (runs now, its returned
//   disposer runs at unload); ctx.plugin(plugin, config) (a child scope disposed with this one);
//   ctx.logger (callable, with debug/info/success/warn/error); lifecycle events `ready` (after
//   apply settles, at once when already ready) and `dispose`; plugin shapes: a function, a class,
//   or an object with apply(ctx, config); `Config` applied to the config when it is a function.
// And the host capabilities, nothing else: ctx.tools.register({ name, description, parameters,
// execute }) (execute(args, exec) runs here; `exec.call(name, args)` calls an agent tool as an
// inner call of that tool call) and ctx.tools.call(name, args); ctx.inspect.provide(name,
// { description?, method(input) { … } }) (an inspection provider whose methods cordis_inspect_query
// runs here, entered like a tool's execute; returns its disposer); the agent's events in
// HOST_EVENTS arrive as ordinary events (ctx.on('tools/result', …)).
//
// The bridge: one ignored callback `out(type, json)` goes to the worker; the worker enters through
// { start, execute, deliver, event, stop }, which return nothing and never throw on purpose.
// Invariants: `out` is held in this closure only and called with strings built here with
// intrinsics captured before the plugin ran; every message an entry sends is counted, and one past
// maxMessagesPerCallback ends the plugin (`limit`); log lines past logLinesPerCallback in one entry
// are dropped and counted. What the plugin does to its realm afterwards (prototypes, JSON,
// Promise) changes only its own behaviour, which the worker treats as untrusted text; the isolate
// is the security boundary, this prelude only keeps the shape honest.

import { PRELUDE_KIT } from '../isolates/prelude-kit.ts';

export const PRELUDE_FILENAME = 'sandbox:///plugin-prelude.js';
/** Script name of the host body; the Function header puts its first line on line 3. */
export const BODY_FILENAME = 'plugin.js';
export const BODY_LINE_OFFSET = 2;

export const PRELUDE_SOURCE = String.raw`'use strict';
(function install(out) {
  const G = globalThis;
  const stringify = JSON.stringify, parse = JSON.parse, String_ = String, Error_ = Error;
  const TypeError_ = TypeError, RangeError_ = RangeError, Promise_ = Promise, Function_ = Function;
  const freeze = Object.freeze, create = Object.create, keys = Object.keys, isArray = Array.isArray, apply = Reflect.apply;
  const slice = String.prototype.slice, fnToString = Function.prototype.toString;
  const all = Promise.all.bind(Promise);
${PRELUDE_KIT}
  let L = null; // limits, set by start
  let budget = 0, logLeft = 0, dropped = 0, noted = false, ended = false;
  const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
  const hostEvents = create(null);

  const isThenable = (v) => v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';

  // Every message to the host goes through here and counts against the entry's budget.
  const send = (type, json) => {
    if (ended) throw new RangeError_('the plugin has ended');
    if (--budget < 0) {
      ended = true;
      out('limit', stringify({ message: 'one callback sent more than ' + L.maxMessagesPerCallback + ' messages to the host' }));
      throw new RangeError_('the plugin sent too many messages to the host');
    }
    out(type, json);
  };
  const trySend = (type, json) => { try { send(type, json); } catch {} };
  const enter = () => {
    budget = L.maxMessagesPerCallback;
    logLeft = L.logLinesPerCallback;
    noted = false;
    if (dropped > 0) {
      const n = dropped;
      dropped = 0;
      logLeft--;
      trySend('log', stringify({ level: 'warn', text: 'logger: ' + n + ' lines were dropped (more than ' + L.logLinesPerCallback + ' in one callback)', dropped: n }));
    }
  };

  // Logging: ctx.logger and console.
  const LEVELS = ['debug', 'info', 'success', 'warn', 'error'];
  const write = (level, prefix, args) => {
    if (ended) return;
    if (logLeft <= 0) {
      dropped++;
      if (!noted) {
        noted = true;
        trySend('log', stringify({ level: 'warn', text: 'logger: more than ' + L.logLinesPerCallback + ' lines in one callback; the rest of them are dropped' }));
      }
      return;
    }
    logLeft--;
    let line = prefix === '' ? '' : '[' + prefix + '] ';
    for (let i = 0; i < args.length; i++) line += (i === 0 ? '' : ' ') + format(args[i]);
    trySend('log', stringify({ level, text: clip(line, L.maxLogChars) }));
  };
  const makeLogger = (prefix) => {
    const logger = (name) => makeLogger(prefix === '' ? text(name) : prefix + ':' + text(name));
    for (const level of LEVELS) logger[level] = (...args) => write(level, prefix, args);
    return freeze(logger);
  };
  const reportError = (context, e) => write('error', '', [context + ': ' + format(e)]);
  G.console = freeze({
    log: (...a) => write('info', '', a), info: (...a) => write('info', '', a),
    warn: (...a) => write('warn', '', a), error: (...a) => write('error', '', a),
    debug: (...a) => write('debug', '', a),
  });

  // Scopes: everything a plugin registers is remembered by its scope and undone, newest first,
  // when the scope is disposed (stop, update, or a child plugin's dispose()).
  const newScope = () => ({ active: true, ready: false, disposables: [] });
  const remember = (scope, undo) => {
    if (!scope.active) throw new Error_('this plugin scope is disposed');
    let done = false;
    const dispose = () => {
      if (done) return false;
      done = true;
      const i = scope.disposables.indexOf(dispose);
      if (i >= 0) scope.disposables.splice(i, 1);
      undo();
      return true;
    };
    scope.disposables.push(dispose);
    return dispose;
  };
  const disposeScope = (scope) => {
    if (!scope.active) return;
    scope.active = false;
    const list = scope.disposables.splice(0);
    for (let i = list.length - 1; i >= 0; i--) {
      try { list[i](); } catch (e) { reportError('a disposer threw', e); }
    }
  };

  // Events.
  const hooks = create(null);
  const hooksOf = (name) => (hooks[name] === undefined ? [] : hooks[name].slice());
  const checkListener = (name, fn) => {
    if (typeof name !== 'string') throw new TypeError_('an event name is a string');
    if (typeof fn !== 'function') throw new TypeError_('a listener is a function');
  };
  // hook.fn is what runs; hook.match what ctx.off compares (the original of a once listener).
  const disposers = new WeakMap();
  const on = (scope, name, fn, prepend, match) => {
    checkListener(name, fn);
    if (name === 'dispose') return remember(scope, () => fn());
    if (name === 'ready' && scope.ready) {
      Promise_.resolve().then(() => fn()).then(undefined, (e) => reportError('a ready listener failed', e));
      return () => false;
    }
    const list = hooks[name] === undefined ? (hooks[name] = []) : hooks[name];
    const hook = { fn, scope, match: match === undefined ? fn : match };
    if (hostEvents[name] === true && list.length === 0) send('listen', stringify({ name, on: true }));
    if (prepend) list.unshift(hook); else list.push(hook);
    const dispose = remember(scope, () => {
      const i = list.indexOf(hook);
      if (i < 0) return;
      list.splice(i, 1);
      if (hostEvents[name] === true && list.length === 0) trySend('listen', stringify({ name, on: false }));
    });
    disposers.set(hook, dispose);
    return dispose;
  };

  // Tools.
  const tools = create(null);
  let toolCount = 0, nextToken = 0;
  const register = (scope, def) => {
    if (def === null || typeof def !== 'object')
      throw new TypeError_('ctx.tools.register({ name, description, parameters, execute })');
    const name = def.name, description = def.description === undefined ? '' : def.description;
    const parameters = def.parameters !== undefined ? def.parameters
      : def.inputSchema !== undefined ? def.inputSchema : { type: 'object', properties: {} };
    if (typeof name !== 'string' || !TOOL_NAME.test(name))
      throw new TypeError_('a tool name is 1 to 64 letters, digits, _ or -, starting with a letter');
    if (typeof description !== 'string') throw new TypeError_('tool ' + name + ': description is a string');
    if (typeof def.execute !== 'function') throw new TypeError_('tool ' + name + ': execute is a function');
    if (parameters === null || typeof parameters !== 'object' || isArray(parameters))
      throw new TypeError_('tool ' + name + ': parameters is a JSON Schema object');
    for (const token in tools)
      if (tools[token].name === name) throw new Error_('this plugin already has a tool named ' + name);
    if (toolCount >= L.maxTools)
      throw new RangeError_('a plugin may have at most ' + L.maxTools + ' tools registered at once');
    const token = nextToken + 1;
    let json;
    try { json = stringify({ token, name, description, parameters, safe: def.concurrencySafe === true }); }
    catch (e) { throw new TypeError_('tool ' + name + ': parameters is not JSON (' + format(e) + ')'); }
    if (json.length > L.maxValueBytes) throw new RangeError_('tool ' + name + ': its schema is over ' + L.maxValueBytes + ' bytes');
    send('register', json);
    nextToken = token;
    tools[token] = { name, def };
    toolCount++;
    return remember(scope, () => {
      delete tools[token];
      toolCount--;
      trySend('unregister', stringify({ token }));
    });
  };

  // Inspection providers: methods share the tools' tokens, so a query enters through execute().
  const providers = create(null);
  let providerCount = 0;
  const provide = (scope, name, def) => {
    if (typeof name !== 'string' || !TOOL_NAME.test(name))
      throw new TypeError_('a provider name is 1 to 64 letters, digits, _ or -, starting with a letter');
    if (def === null || typeof def !== 'object')
      throw new TypeError_('ctx.inspect.provide(name, { description?, method(input) { … } })');
    let description = '';
    const methods = create(null), names = [];
    for (const key of keys(def)) {
      const fn = def[key];
      if (key === 'description' && typeof fn === 'string') { description = clip(fn, 2000); continue; }
      if (typeof fn !== 'function') throw new TypeError_('provider ' + name + ': ' + clip(key, 80) + ' is not a method');
      if (!TOOL_NAME.test(key))
        throw new TypeError_('provider ' + name + ': a method name is 1 to 64 letters, digits, _ or -, starting with a letter');
      if (names.length >= L.maxProviderMethods)
        throw new RangeError_('provider ' + name + ': at most ' + L.maxProviderMethods + ' methods');
      methods[key] = fn;
      names.push(key);
    }
    if (names.length === 0) throw new TypeError_('provider ' + name + ': it has no methods');
    for (const token in providers)
      if (providers[token].name === name) throw new Error_('this plugin already provides ' + name);
    if (providerCount >= L.maxProviders)
      throw new RangeError_('a plugin may provide at most ' + L.maxProviders + ' inspection providers at once');
    const token = nextToken + 1;
    send('provide', stringify({ token, name, description, methods: names }));
    nextToken = token;
    providers[token] = { name, def, methods };
    providerCount++;
    return remember(scope, () => {
      delete providers[token];
      providerCount--;
      trySend('unprovide', stringify({ token }));
    });
  };
  // What one entry runs: a tool's execute, or a provider's method with argsJson { method, input }.
  const runEntry = (token, argsJson, exec) => {
    const tool = tools[token];
    if (tool !== undefined) return apply(tool.def.execute, tool.def, [parse(argsJson), exec]);
    const provider = providers[token];
    if (provider === undefined) throw new Error_('the tool is no longer registered');
    const query = parse(argsJson);
    const method = provider.methods[query.method];
    if (method === undefined) throw new Error_('provider ' + provider.name + ' has no method ' + text(query.method));
    return apply(method, provider.def, [query.input]);
  };

  // Calls of the agent's tools: one message out, settled by deliver().
  const waiting = create(null);
  let callSeq = 0, inFlight = 0;
  const settle = async (reply) => {
    const envelope = parse(await reply);
    inFlight--;
    if (envelope.ok) return envelope.value;
    const error = new Error_(text(envelope.error.message));
    error.name = 'ToolError';
    error.code = text(envelope.error.code);
    throw error;
  };
  const callTool = (name, args, entry) => {
    if (typeof name !== 'string' || name === '') return Promise_.reject(new TypeError_('tools.call(name, args): name is a tool name'));
    if (inFlight >= L.maxCallsInFlight)
      return Promise_.reject(new RangeError_('more than ' + L.maxCallsInFlight + ' tool calls in flight; await some first'));
    const id = callSeq + 1;
    let json;
    try { json = stringify({ id, name, entry, args: args === undefined ? {} : args }); }
    catch (e) { return Promise_.reject(new TypeError_('tools.call ' + name + ': arguments are not JSON (' + format(e) + ')')); }
    if (json.length > L.maxValueBytes)
      return Promise_.reject(new RangeError_('tools.call ' + name + ': arguments are over ' + L.maxValueBytes + ' bytes of JSON'));
    try { send('call', json); } catch (e) { return Promise_.reject(e); }
    callSeq = id;
    inFlight++;
    return settle(new Promise_((resolve) => { waiting[id] = resolve; }));
  };

  // Plugins and contexts.
  const isClass = (fn) => { try { return /^class[\s{]/.test(apply(fnToString, fn, [])); } catch { return false; } };
  const nameOf = (plugin) => {
    try { const n = plugin.name; return typeof n === 'string' && n !== '' ? clip(n, 200) : 'anonymous'; }
    catch { return 'anonymous'; }
  };
  const applyPlugin = (plugin, ctx, config) => {
    if (plugin !== null && (typeof plugin === 'object' || typeof plugin === 'function') && typeof plugin.Config === 'function')
      config = plugin.Config(config);
    ctx.config = config;
    if (typeof plugin === 'function') {
      if (isClass(plugin)) { new plugin(ctx, config); return undefined; }
      return plugin(ctx, config);
    }
    if (plugin !== null && typeof plugin === 'object' && typeof plugin.apply === 'function')
      return apply(plugin.apply, plugin, [ctx, config]);
    throw new TypeError_('the host body must return a plugin: a function (ctx, config) or { name, apply(ctx, config) }');
  };
  const fork = (parent, plugin, config) => {
    const scope = newScope();
    const dispose = remember(parent, () => disposeScope(scope));
    const ctx = makeContext(scope, config === undefined ? {} : config, nameOf(plugin));
    try {
      const result = applyPlugin(plugin, ctx, ctx.config);
      if (isThenable(result)) result.then(undefined, (e) => { reportError('plugin ' + nameOf(plugin) + ' failed', e); dispose(); });
    } catch (e) { dispose(); throw e; }
    return freeze({ dispose, get active() { return scope.active; } });
  };
  const makeContext = (scope, config, name) => {
    const ctx = {
      config,
      on: (event, fn, prepend) => on(scope, event, fn, prepend),
      once: (event, fn, prepend) => {
        checkListener(event, fn);
        let dispose = () => false;
        const wrapper = function (...args) { dispose(); return apply(fn, this, args); };
        dispose = on(scope, event, wrapper, prepend, fn);
        return dispose;
      },
      off: (event, fn) => {
        for (const hook of hooksOf(event)) {
          if (hook.match !== fn) continue;
          const dispose = disposers.get(hook);
          if (dispose !== undefined) return dispose();
        }
        return false;
      },
      emit: (event, ...args) => { for (const hook of hooksOf(event)) apply(hook.fn, null, args); },
      parallel: async (event, ...args) => { await all(hooksOf(event).map(async (hook) => { await apply(hook.fn, null, args); })); },
      serial: async (event, ...args) => {
        for (const hook of hooksOf(event)) {
          const result = await apply(hook.fn, null, args);
          if (result !== null && result !== undefined) return result;
        }
        return undefined;
      },
      bail: (event, ...args) => {
        for (const hook of hooksOf(event)) {
          const result = apply(hook.fn, null, args);
          if (result !== null && result !== undefined) return result;
        }
        return undefined;
      },
      effect: (execute) => {
        if (typeof execute !== 'function') throw new TypeError_('ctx.effect(execute): execute is a function');
        const result = execute();
        const undo = typeof result === 'function' ? result
          : result !== null && typeof result === 'object' && typeof result.dispose === 'function' ? () => result.dispose()
          : undefined;
        if (undo === undefined) throw new TypeError_('ctx.effect(execute): execute must return a dispose function');
        return remember(scope, undo);
      },
      plugin: (plugin, config) => fork(scope, plugin, config),
      logger: makeLogger(name),
      tools: freeze({
        register: (def) => register(scope, def),
        call: (tool, args) => callTool(tool, args, 0),
      }),
      inspect: freeze({ provide: (name, def) => provide(scope, name, def) }),
    };
    return ctx;
  };
  const describe = (kind, e) => {
    const d = describeError(kind, e);
    return { ok: false, kind: d.kind, name: d.name, message: d.message, stack: d.stack };
  };

  let root;
  const start = async (src, config) => {
    let body, plugin;
    try { body = new Function_(src + '\n//# sourceURL=${BODY_FILENAME}'); }
    catch (e) { return trySend('started', stringify(describe('compile', e))); }
    try {
      plugin = body();
      if (isThenable(plugin)) plugin = await plugin;
    } catch (e) { return trySend('started', stringify(describe('apply', e))); }
    const name = nameOf(plugin);
    root = newScope();
    try {
      const result = applyPlugin(plugin, makeContext(root, config, name), config);
      if (isThenable(result)) await result;
    } catch (e) { return trySend('started', stringify(describe('apply', e))); }
    root.ready = true;
    for (const hook of hooksOf('ready')) {
      try {
        const result = apply(hook.fn, null, []);
        if (isThenable(result)) result.then(undefined, (e) => reportError('a ready listener failed', e));
      } catch (e) { reportError('a ready listener threw', e); }
    }
    trySend('started', stringify({ ok: true, name }));
  };

  const execute = async (entry, token, argsJson, callId) => {
    let envelope;
    try {
      const exec = freeze({ callId, call: (name, args) => callTool(name, args, entry) });
      const value = await runEntry(token, argsJson, exec);
      envelope = { entry, ok: true, value: value === undefined ? null : value };
    } catch (e) {
      const d = describe('runtime', e);
      envelope = { entry, ok: false, error: { name: d.name, message: d.message } };
    }
    let json;
    try { json = stringify(envelope); } catch (e) { json = undefined; }
    if (json === undefined)
      json = stringify({ entry, ok: false, error: { name: 'TypeError', message: 'the result is not JSON-serialisable' } });
    else if (json.length > L.maxValueBytes)
      json = stringify({ entry, ok: false, error: { name: 'RangeError', message: 'the result is ' + json.length + ' bytes of JSON, over the ' + L.maxValueBytes + '-byte limit' } });
    trySend('done', json);
  };

  // Copies made by the worker: real arrays of numbers and strings, read by index only.
  const deliver = (ids, envelopes) => {
    for (let i = 0; i < ids.length; i++) {
      const resolve = waiting[ids[i]];
      if (resolve === undefined) continue;
      delete waiting[ids[i]];
      resolve(envelopes[i]);
    }
  };

  const event = (name, dataJson) => {
    let data;
    try { data = parse(dataJson); } catch { return; }
    for (const hook of hooksOf(name)) {
      try {
        const result = apply(hook.fn, null, [data]);
        if (isThenable(result)) result.then(undefined, (e) => reportError('a listener of ' + name + ' failed', e));
      } catch (e) { reportError('a listener of ' + name + ' threw', e); }
    }
  };

  const stop = () => {
    if (root !== undefined) disposeScope(root);
    trySend('stopped', '{}');
  };

  const api = create(null);
  api.start = (src, configJson, limitsJson, hostEventsJson) => {
    L = parse(limitsJson);
    for (const name of parse(hostEventsJson)) hostEvents[name] = true;
    enter();
    start(src, parse(configJson));
  };
  api.execute = (entry, token, argsJson, callId) => { enter(); execute(entry, token, argsJson, callId); };
  api.deliver = (ids, envelopes) => { enter(); deliver(ids, envelopes); };
  api.event = (name, dataJson) => { enter(); event(name, dataJson); };
  api.stop = () => { enter(); stop(); };
  return freeze(api);
})`;
