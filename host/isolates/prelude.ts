// The only code that runs in an isolate before the program: it receives the bridge callbacks as
// arguments (never as globals), strips globals the program must not have, and returns
// `{ run, deliver }` to the worker (as References the program never sees). The bridge is one-way
// each direction: `call(id, name, argsJson)` goes out, `deliver(ids, envelopeJsons, inline)` comes
// back (one settled call as a number and a string, several per entry as copied arrays of numbers
// and strings), and the
// program's outcome leaves through `done(resultString)`; no promise, function or other object ever
// crosses.
// Two ways to enter (the worker picks per entry): queued, on isolated-vm's thread pool, where `call`,
// `log` and `done` must not wait for the worker's thread (ignored Callbacks); or inline, on the
// worker's own thread while it has no other run, where their inline twins run at once (no thread
// hand-off; an ignored Callback from an inline entry reaches the worker only about 1 ms later).
// Invariants: no Reference, host function or ivm object is ever stored where the program can reach
// it; both callbacks are held in this closure only and are called with primitive strings and numbers
// built here with intrinsics captured before any program code ran. Whatever the program does to the
// realm afterwards (prototypes, JSON, Promise) changes only its own result, which the worker treats
// as untrusted text. The isolate is the security boundary; this prelude only keeps the shape honest.
// The program has no timer or other event source of its own (no setTimeout, FinalizationRegistry,
// Atomics.waitAsync, WebAssembly): it runs only inside an entry, `run` or `deliver`.
// Cost: the prelude is installed while the slot is prepared, ahead of demand. The functions every
// run enters (run, start, makeTools, binding, deliver) are written in parentheses, which makes V8
// compile them with the prelude instead of lazily at a run's first entry (its "PIFE" heuristic),
// and install() warms the compiler and JSON once (see the end): both move work off the run.

import { PRELUDE_KIT } from './prelude-kit.ts';

/** Log channel codes (first argument of the log callback). */
export const LOG_LINE = 0;
/** A cap was hit inside the isolate; the text says which. The worker ends the run as `limit`. */
export const LOG_LIMIT = 1;

/** Tags on the string `start` resolves to: V<json> value, U undefined, E<json {kind,name,message,stack}> failure. */
export const PRELUDE_FILENAME = 'sandbox:///prelude.js';
/** Script name of the program itself; the AsyncFunction header adds 2 lines before its first line. */
export const PROGRAM_FILENAME = 'program.js';
export const PROGRAM_LINE_OFFSET = 2;

export const PRELUDE_SOURCE = String.raw`'use strict';
(function install(callQueued, callInline, logQueued, logInline, doneQueued, doneInline) {
  const G = globalThis;
  const stringify = JSON.stringify, parse = JSON.parse, String_ = String, Error_ = Error;
  const TypeError_ = TypeError, RangeError_ = RangeError;
  const freeze = Object.freeze, defineProperty = Object.defineProperty, create = Object.create;
  const keys = Object.keys, isArray = Array.isArray;
  const AsyncFunction = (async function () {}).constructor;
  const apply = Reflect.apply, slice = String.prototype.slice;
  // Set by each entry before any program code runs in it; every call of that entry goes the same way.
  let inline = false;
  const call = (id, name, json) => (inline ? callInline(id, name, json) : callQueued(id, name, json));
  const log = (code, line) => (inline ? logInline(code, line) : logQueued(code, line));
  const done = (result) => (inline ? doneInline(result) : doneQueued(result));
${PRELUDE_KIT}  let limits = { maxOutputBytes: 0, maxCallBytes: 0, maxResultBytes: 0, maxCalls: 0 };
  let outBytes = 0, calls = 0, over = false;
  const waiting = create(null);
  const Promise_ = Promise;

  const fail = (message) => { over = true; log(${LOG_LIMIT}, clip(text(message), 2000)); return new RangeError_(message); };

  const emit = (args) => {
    if (over) throw new RangeError_('output is closed');
    let line = '';
    for (let i = 0; i < args.length; i++) line += (i === 0 ? '' : ' ') + format(args[i]);
    const room = limits.maxOutputBytes - outBytes;
    outBytes += line.length + 1;
    // Past the cap the worker ends the run; it still gets the part that fits plus one character.
    log(${LOG_LINE}, clip(line, room < 0 ? 1 : room + 1));
    if (outBytes > limits.maxOutputBytes) { over = true; throw new RangeError_('console output limit reached'); }
  };
  const console_ = freeze({
    log: (...a) => emit(a), info: (...a) => emit(a), warn: (...a) => emit(a),
    error: (...a) => emit(a), debug: (...a) => emit(a),
  });

  const binding = ((name) => (async function (args) {
    if (over) throw new RangeError_('the run has ended');
    // The id is taken with the count, before the arguments are serialised: a toJSON in them may
    // make calls of its own, which take the next ids.
    const id = ++calls;
    if (id > limits.maxCalls) throw fail('more than ' + limits.maxCalls + ' tool calls in one run');
    let json;
    try { json = args === undefined ? '{}' : stringify(args); }
    catch (e) { throw new TypeError_('tools.' + name + ': arguments are not JSON-serialisable (' + format(e) + ')'); }
    if (json === undefined) json = 'null';
    if (json.length > limits.maxCallBytes)
      throw fail('tools.' + name + ' arguments are ' + json.length + ' bytes of JSON, over the ' + limits.maxCallBytes + '-byte limit');
    const reply = new Promise_((resolve) => { waiting[id] = resolve; });
    call(id, name, json);
    const envelope = parse(await reply);
    if (envelope.ok) return envelope.value;
    const error = new Error_(text(envelope.error.message));
    error.name = 'ToolError';
    error.code = text(envelope.error.code);
    throw error;
  }));
  const makeTools = ((names) => {
    const tools = create(null);
    for (const name of names) defineProperty(tools, name, { value: freeze(binding(name)), enumerable: true });
    return freeze(tools);
  });
  // Built from stringified strings only: JSON.stringify looks up toJSON on objects (an
  // Object.prototype.toJSON of the program's), never on a string, so the description is the one
  // describeError made, not whatever the program's toJSON returns or throws (a throw here left
  // start() without done(), and a thrown error ended as "stalled").
  const describe = (kind, e) => {
    const d = describeError(kind, e);
    return 'E{"kind":' + stringify(d.kind) + ',"name":' + stringify(d.name) + ',"message":' +
      stringify(d.message) + ',"stack":' + stringify(d.stack) + '}';
  };

  const settle = (id, envelope) => {
    const resolve = waiting[id];
    if (resolve === undefined) return;
    delete waiting[id];
    resolve(envelope);
  };
  // One settled call as a number and a string (no array to copy in: the common, sequential case),
  // or several as copies made by the worker: real arrays of numbers and strings, read by index only.
  const deliver = ((ids, envelopes, inlineEntry) => {
    inline = inlineEntry === true;
    if (typeof ids === 'number') return settle(ids, envelopes);
    for (let i = 0; i < ids.length; i++) settle(ids[i], envelopes[i]);
  });

  // A dynamic function records where it was made (its eval origin): V8 then re-parses the calling
  // function for source positions it compiled without. Made here, only this small function is
  // re-parsed, once, by the warm-up below; made in start(), the whole prelude was, in each run.
  const compileMain = ((body) => new AsyncFunction('tools', 'console', body));
  const start = (async function start(src, bindingsJson, globalsJson, limitsJson) {
    limits = parse(limitsJson);
    const tools = makeTools(parse(bindingsJson));
    const globals = parse(globalsJson);
    for (const key of keys(globals)) defineProperty(G, key, { value: globals[key], writable: true, configurable: true });
    defineProperty(G, 'console', { value: console_, writable: true, configurable: true });
    let main;
    try { main = compileMain(src + '\nreturn __main(tools, console);\n//# sourceURL=${PROGRAM_FILENAME}'); }
    catch (e) { return done(describe('compile', e)); }
    let value;
    try { value = await main(tools, console_); } catch (e) { return done(describe('runtime', e)); }
    let json;
    try { json = stringify(value); }
    catch (e) { return done(describe('runtime', new TypeError_('the return value is not JSON-serialisable: ' + format(e)))); }
    if (json === undefined) return done('U');
    if (json.length > limits.maxResultBytes)
      return done(describe('limit', new RangeError_('the return value is ' + json.length + ' bytes of JSON, over the ' + limits.maxResultBytes + '-byte limit')));
    done('V' + json);
  });
  // The outcome leaves through done() from inside start(), never through a then() on start()'s
  // promise: the program may have replaced Promise.prototype.then, Function.prototype.call or the
  // promise species by then, and none of that may change where (or whether) its outcome goes.
  const run = ((src, bindingsJson, globalsJson, limitsJson, inlineEntry) => {
    inline = inlineEntry === true;
    start(src, bindingsJson, globalsJson, limitsJson);
  });
  // Warm-up, by the service at install time (ahead of demand, before any program exists): in a fresh
  // isolate the first JSON round trip and the first compile through the AsyncFunction constructor
  // cost more than the rest of a short run. Nothing of it stays reachable; what it leaves is V8's
  // own caches of this isolate, which hold the service's code only.
  parse(stringify({ warm: [1, 'up'] }));
  compileMain('return 1;\n//# sourceURL=sandbox:///warmup.js');
  makeTools(['warm']);
  const api = create(null);
  api.run = run;
  api.deliver = deliver;
  return freeze(api);
})`;
