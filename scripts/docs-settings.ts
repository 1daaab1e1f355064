// Writes the settings reference of docs/configuration.md from the settings table
// (host/settings.ts): everything between the two markers is replaced. Run it after changing the
// table: `node scripts/docs-settings.ts` (tests/unit/config.test.ts fails while the doc is stale).
import { readFileSync, writeFileSync } from 'node:fs';
import { DOC_BEGIN, DOC_END, settingsMarkdown } from '../host/settings-text.ts';

const file = new URL('../docs/configuration.md', import.meta.url);
const doc = readFileSync(file, 'utf8');
const begin = doc.indexOf(DOC_BEGIN);
const end = doc.indexOf(DOC_END);
if (begin < 0 || end < begin)
  throw new Error(`docs/configuration.md has no ${DOC_BEGIN} ... ${DOC_END} block`);
writeFileSync(file, doc.slice(0, begin) + settingsMarkdown() + doc.slice(end + DOC_END.length));
process.stdout.write('docs/configuration.md: settings reference written\n');
