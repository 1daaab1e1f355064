// A tiny TypeScript type AST, its normalising constructors and its printer. The converter
// builds these nodes; printing is the only place that knows about parentheses and layout.
import { defaultText, docComment, docLines } from './jsdoc.ts';
import { propertyKey } from './names.ts';

export type Keyword = 'unknown' | 'never' | 'string' | 'number' | 'boolean' | 'null' | 'undefined';

export type TsType =
  /** A built-in type keyword. */
  | { kind: 'keyword'; name: Keyword }
  /** A literal type, already printed (`"a"`, `1`, `true`). */
  | { kind: 'literal'; text: string }
  /** A reference to an emitted named type. */
  | { kind: 'ref'; name: string }
  | { kind: 'array'; element: TsType }
  /** Elements from index `required` on are optional; `rest` types the remaining items. */
  | { kind: 'tuple'; elements: TsType[]; required: number; rest: TsType | undefined }
  /** `index` is the value type of a `[key: string]` signature, when there is one. */
  | { kind: 'object'; members: TsMember[]; index: TsType | undefined }
  | { kind: 'union'; members: TsType[] }
  | { kind: 'intersection'; members: TsType[] };

export interface TsMember {
  name: string;
  type: TsType;
  optional: boolean;
  description: string | undefined;
  /** The schema's `default`, when it has one (any JSON value). */
  default: { value: unknown } | undefined;
}

export const UNKNOWN: TsType = { kind: 'keyword', name: 'unknown' };
export const NEVER: TsType = { kind: 'keyword', name: 'never' };

export function keyword(name: Keyword): TsType {
  return { kind: 'keyword', name };
}

export function isUnknown(type: TsType): boolean {
  return type.kind === 'keyword' && type.name === 'unknown';
}

/** Flattened, de-duplicated union; `unknown` absorbs everything, `never` disappears. */
export function union(members: readonly TsType[]): TsType {
  const flat = members.flatMap((member) => (member.kind === 'union' ? member.members : [member]));
  if (flat.some(isUnknown)) return UNKNOWN;
  const kept = dedupe(flat.filter((member) => !(member.kind === 'keyword' && member.name === 'never')));
  if (kept.length === 0) return NEVER;
  return kept.length === 1 ? (kept[0] as TsType) : { kind: 'union', members: kept };
}

/** Flattened, de-duplicated intersection; `unknown` disappears, `never` absorbs everything. */
export function intersection(members: readonly TsType[]): TsType {
  const flat = members.flatMap((member) => (member.kind === 'intersection' ? member.members : [member]));
  if (flat.some((member) => member.kind === 'keyword' && member.name === 'never')) return NEVER;
  const kept = dedupe(flat.filter((member) => !isUnknown(member)));
  if (kept.length === 0) return UNKNOWN;
  return kept.length === 1 ? (kept[0] as TsType) : { kind: 'intersection', members: kept };
}

function dedupe(members: readonly TsType[]): TsType[] {
  const seen = new Set<string>();
  return members.filter((member) => {
    const text = printType(member, '');
    if (seen.has(text)) return false;
    seen.add(text);
    return true;
  });
}

/** Prints a type; multi-line object members are indented one step past `indent`. */
export function printType(type: TsType, indent: string): string {
  switch (type.kind) {
    case 'keyword':
      return type.name;
    case 'literal':
      return type.text;
    case 'ref':
      return type.name;
    case 'array':
      return `${wrapComposite(type.element, indent)}[]`;
    case 'tuple': {
      const items = type.elements.map((element, i) =>
        i < type.required ? printType(element, indent) : `${wrapComposite(element, indent)}?`,
      );
      if (type.rest !== undefined) items.push(`...${wrapComposite(type.rest, indent)}[]`);
      return `[${items.join(', ')}]`;
    }
    case 'object':
      return printObject(type.members, type.index, indent);
    case 'union':
      return type.members.map((member) => printType(member, indent)).join(' | ');
    case 'intersection':
      return type.members
        .map((member) =>
          member.kind === 'union' ? `(${printType(member, indent)})` : printType(member, indent),
        )
        .join(' & ');
  }
}

function wrapComposite(type: TsType, indent: string): string {
  const text = printType(type, indent);
  return type.kind === 'union' || type.kind === 'intersection' ? `(${text})` : text;
}

/** `{ … }` body shared by inline object types and interfaces. */
export function printObject(members: readonly TsMember[], index: TsType | undefined, indent: string): string {
  if (members.length === 0 && index === undefined) return '{}';
  const inner = `${indent}  `;
  let out = '{\n';
  for (const member of members) {
    out += docComment(memberDocLines(member), inner);
    out += `${inner}${propertyKey(member.name)}${member.optional ? '?' : ''}: ${printType(member.type, inner)};\n`;
  }
  if (index !== undefined) out += `${inner}[key: string]: ${printType(index, inner)};\n`;
  return `${out}${indent}}`;
}

function memberDocLines(member: TsMember): string[] {
  const lines = member.description === undefined ? [] : docLines(member.description);
  const text = member.default === undefined ? undefined : defaultText(member.default.value);
  if (text !== undefined) lines.push(`@default ${text}`);
  return lines;
}

/** Names of the named types a type refers to, in first-appearance order. */
export function referencedNames(type: TsType, into: Set<string> = new Set()): Set<string> {
  switch (type.kind) {
    case 'ref':
      into.add(type.name);
      break;
    case 'array':
      referencedNames(type.element, into);
      break;
    case 'tuple':
      for (const element of type.elements) referencedNames(element, into);
      if (type.rest !== undefined) referencedNames(type.rest, into);
      break;
    case 'object':
      for (const member of type.members) referencedNames(member.type, into);
      if (type.index !== undefined) referencedNames(type.index, into);
      break;
    case 'union':
    case 'intersection':
      for (const member of type.members) referencedNames(member, into);
      break;
    default:
      break;
  }
  return into;
}

/** True when the type has an object type anywhere in it (then it deserves a name). */
export function containsObject(type: TsType): boolean {
  switch (type.kind) {
    case 'object':
      return true;
    case 'array':
      return containsObject(type.element);
    case 'tuple':
      return type.elements.some(containsObject) || (type.rest !== undefined && containsObject(type.rest));
    case 'union':
    case 'intersection':
      return type.members.some(containsObject);
    default:
      return false;
  }
}
