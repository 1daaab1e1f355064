// Makes sure a Chromium is there for the console's browser tests (driven by playwright-core,
// which downloads no browser). Order: CHROMIUM_PATH when set; a chromium on PATH; otherwise, as
// root on Debian, install Debian's `chromium` package (once, like docker-engine.ts installs
// docker.io); otherwise stop with a message saying what to install.
import { existsSync } from 'node:fs';
import { log, run, which } from './exec.ts';

export const ensureChromium = async (): Promise<string> => {
  const given = process.env.CHROMIUM_PATH;
  if (given) {
    if (!existsSync(given)) throw new Error(`CHROMIUM_PATH=${given} does not exist`);
    return given;
  }
  const found = (await which('chromium')) ?? (await which('chromium-browser'));
  if (found) return found;
  if (process.getuid?.() !== 0 || !existsSync('/etc/debian_version'))
    throw new Error('no Chromium for the console browser tests: install chromium, or set CHROMIUM_PATH');
  log('no Chromium: installing Debian chromium for the browser tests (one time) ...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env, inherit: true });
  const install = await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], {
    env,
    inherit: true,
  });
  const installed = await which('chromium');
  if (install.code !== 0 || !installed)
    throw new Error('apt-get install chromium failed; install Chromium by hand');
  return installed;
};
