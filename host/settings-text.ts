// The settings table (settings.ts) as people read it: the `--help` text of `serve` and the
// reference tables of docs/configuration.md (written by scripts/docs-settings.ts). Both come from
// the table alone, so neither can list a setting the service does not read, or miss one it does.
import { SETTINGS, type Section, type Setting } from './settings.ts';

const ROWS = Object.values(SETTINGS) as Array<Setting<unknown>>;

const bySection = (): Map<Section, Array<Setting<unknown>>> => {
  const sections = new Map<Section, Array<Setting<unknown>>>();
  for (const row of ROWS) sections.set(row.section, [...(sections.get(row.section) ?? []), row]);
  return sections;
};

const plain = (markdown: string): string => markdown.replaceAll('`', '');

/** The environment part of `--help`: every setting, by section, with its default. */
export function settingsHelp(): string {
  const lines: string[] = [];
  for (const [section, rows] of bySection()) {
    lines.push(`${section}:`);
    for (const row of rows) {
      const name = row.flag ? `${row.env}, ${row.flag}` : row.env;
      lines.push(`  ${name.padEnd(34)} ${row.help}; default ${plain(row.shown)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The first line and last line of the generated part of docs/configuration.md. */
export const DOC_BEGIN =
  '<!-- settings: made by `node scripts/docs-settings.ts` from host/settings.ts; edit the table there -->';
export const DOC_END = '<!-- /settings -->';

/** The reference tables of docs/configuration.md, one per section, between DOC_BEGIN and DOC_END. */
export function settingsMarkdown(): string {
  const parts: string[] = [DOC_BEGIN];
  for (const [section, rows] of bySection()) {
    parts.push('', `### ${section[0]?.toUpperCase()}${section.slice(1)}`, '');
    parts.push('| variable | default | meaning |', '|---|---|---|');
    for (const row of rows) {
      const name = row.flag ? `\`${row.env}\` / \`${row.flag}\`` : `\`${row.env}\``;
      parts.push(`| ${name} | ${row.shown} | ${row.doc ?? row.help} |`);
    }
  }
  parts.push('', DOC_END);
  return parts.join('\n');
}
