// Identifier rules for generated code: tool names → `tools.<binding>` names, names of emitted
// types, and property keys. Every mapping is a pure function of its input, so the SDK text
// and the binding table are reproducible.
import type { NameBinding } from './types.ts';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Words a binding may not be: ECMAScript reserved words (strict mode included), the literals,
 * `await`, and `__proto__` (assigning it on an ordinary object would replace the prototype).
 */
const RESERVED = new Set([
  'await',
  'break',
  'case',
  'catch',
  'class',
  'const',
  'continue',
  'debugger',
  'default',
  'delete',
  'do',
  'else',
  'enum',
  'export',
  'extends',
  'false',
  'finally',
  'for',
  'function',
  'if',
  'implements',
  'import',
  'in',
  'instanceof',
  'interface',
  'let',
  'new',
  'null',
  'package',
  'private',
  'protected',
  'public',
  'return',
  'static',
  'super',
  'switch',
  'this',
  'throw',
  'true',
  'try',
  'typeof',
  'var',
  'void',
  'while',
  'with',
  'yield',
  'arguments',
  'eval',
  'undefined',
  'NaN',
  'Infinity',
  '__proto__',
]);

/** True when `name` is an ASCII JavaScript identifier that is not a reserved word. */
export function isBindableIdentifier(name: string): boolean {
  return IDENTIFIER.test(name) && !RESERVED.has(name);
}

/**
 * Maps any string to an identifier: characters outside `[A-Za-z0-9_$]` become `_`, and a
 * leading digit, a reserved word or an empty result gets a `_` prefix.
 */
export function toIdentifier(name: string): string {
  const replaced = name.replace(/[^A-Za-z0-9_$]/g, '_');
  if (replaced === '' || /^[0-9]/.test(replaced) || RESERVED.has(replaced)) return `_${replaced}`;
  return replaced;
}

/**
 * The binding table, in input order. Names that are already bindable identifiers keep
 * themselves. Every other name is mapped with `toIdentifier`; mapped names claim their
 * identifier in sorted order of the original names, and a name whose identifier is taken gets
 * the first free `_2`, `_3`, … suffix. Adding a tool therefore never renames a tool whose name
 * was already an identifier. Repeated input names are bound once (first wins).
 */
export function bindToolNames(names: readonly string[]): NameBinding[] {
  const unique = [...new Set(names)];
  const taken = new Set(unique.filter(isBindableIdentifier));
  const bound = new Map<string, string>();
  for (const name of taken) bound.set(name, name);
  const mapped = unique.filter((name) => !taken.has(name)).sort(compareCodeUnits);
  for (const name of mapped) {
    const base = toIdentifier(name);
    let binding = base;
    for (let n = 2; taken.has(binding); n++) binding = `${base}_${n}`;
    taken.add(binding);
    bound.set(name, binding);
  }
  return unique.map((tool) => ({ tool, binding: bound.get(tool) ?? tool }));
}

/** `mcp__github__create_issue` → `McpGithubCreateIssue`; never empty, never starts with a digit. */
export function toPascal(name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter((word) => word !== '');
  const joined = words.map((word) => word[0]?.toUpperCase() + word.slice(1)).join('');
  if (joined === '') return 'T';
  return /^[0-9]/.test(joined) ? `T${joined}` : joined;
}

/** A property key as written in a type: bare when it is an ASCII identifier, else quoted. */
export function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** Global names that a generated type must never shadow (the declarations are a script). */
const GLOBAL_TYPES = new Set([
  'Array',
  'ArrayLike',
  'Boolean',
  'Date',
  'Error',
  'Function',
  'JSON',
  'Map',
  'Math',
  'Number',
  'Object',
  'Partial',
  'Promise',
  'PromiseLike',
  'Readonly',
  'Record',
  'RegExp',
  'Set',
  'String',
  'Symbol',
  'ReadonlyArray',
  'Iterable',
  'Required',
  'Pick',
  'Omit',
]);

/** Hands out unique type names; supports rolling back a failed tool's names. */
export class TypeNameAllocator {
  #used = new Set<string>(GLOBAL_TYPES);

  /** `base` if free, else `base2`, `base3`, … */
  allocate(base: string): string {
    let name = base;
    for (let n = 2; this.#used.has(name); n++) name = `${base}${n}`;
    this.#used.add(name);
    return name;
  }

  release(names: Iterable<string>): void {
    for (const name of names) this.#used.delete(name);
  }
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
