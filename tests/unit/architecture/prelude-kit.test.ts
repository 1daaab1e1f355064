// The code both isolate runtimes run before untrusted code lives once (host/isolates/prelude-kit.ts):
// the run_code prelude and the plugin prelude splice the same kit, and neither keeps a hardening or
// an error-describing helper of its own that a fix to the other could miss.
import { describe, expect, it } from 'vitest';
import { PRELUDE_SOURCE as PROGRAM_PRELUDE } from '../../../host/isolates/prelude.ts';
import { PRELUDE_KIT, STRIPPED_GLOBALS } from '../../../host/isolates/prelude-kit.ts';
import { PRELUDE_SOURCE as PLUGIN_PRELUDE } from '../../../host/plugins/prelude.ts';

describe('one prelude kit for both isolate runtimes', () => {
  it.each([
    ['run_code and workflows', PROGRAM_PRELUDE],
    ['creator plugins', PLUGIN_PRELUDE],
  ])('%s splice the kit, and strip and describe nothing on their own', (_, source) => {
    expect(source).toContain(PRELUDE_KIT);
    const own = source.replace(PRELUDE_KIT, '');
    for (const name of STRIPPED_GLOBALS) expect(own).not.toContain(name);
    for (const helper of ['const clip =', 'const text =', 'const format =', "'Uncaught '"])
      expect(own).not.toContain(helper);
  });
});
