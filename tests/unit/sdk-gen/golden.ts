// Reading and rewriting golden files (tests/unit/sdk-gen/golden/<case>.txt).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const GOLDEN_DIR = fileURLToPath(new URL('./golden/', import.meta.url));

export function goldenPath(name: string): string {
  return `${GOLDEN_DIR}${name}.txt`;
}

export function readGolden(name: string): string {
  return readFileSync(goldenPath(name), 'utf8');
}

export function writeGolden(name: string, text: string): void {
  writeFileSync(goldenPath(name), text);
}

/** Set by `UPDATE_GOLDEN=1`: the golden test rewrites the files instead of failing. */
export const updateGolden = process.env.UPDATE_GOLDEN === '1';
