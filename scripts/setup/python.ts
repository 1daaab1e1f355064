// Makes sure of a Python for the Python client's tests (client-py/): Python 3.11 or newer that
// imports httpx and websockets, and has pip and setuptools (the test installs the package with pip,
// offline) and mypy (the test type-checks the package and its README example, as a user's would be). Order: DSH_PYTHON when set; python3 on PATH, then /usr/bin/python3 (a pyenv python
// first on PATH may lack Debian's packages); otherwise, as root on Debian, install Debian's
// python3-httpx, python3-websockets, python3-pip, python3-setuptools and mypy (once, as chromium.ts
// installs chromium); otherwise stop with a message saying what to install.
import { existsSync } from 'node:fs';
import { log, run, which } from './exec.ts';

export const PYTHON_PACKAGES = [
  'python3',
  'python3-httpx',
  'python3-websockets',
  'python3-pip',
  'python3-setuptools',
  // The test type-checks the installed package and its README example (the check below asks for it).
  'mypy',
];

// pip, setuptools and mypy are looked up, not imported: importing both in one process trips setuptools'
// distutils check on Debian.
const CHECK = [
  'import sys, importlib.util, httpx, websockets',
  "found = all(importlib.util.find_spec(m) for m in ('pip', 'setuptools', 'mypy'))",
  'sys.exit(0 if found and sys.version_info >= (3, 11) else 1)',
].join('; ');

/** `python` is 3.11+ and imports what the client and its tests need. */
const fits = async (python: string): Promise<boolean> => (await run(python, ['-c', CHECK])).code === 0;

const candidates = async (): Promise<string[]> =>
  [await which('python3'), '/usr/bin/python3'].filter((p): p is string => p !== undefined && existsSync(p));

/** The path of a Python fit for the client's tests, installed from Debian when there is none. */
export const ensurePython = async (): Promise<string> => {
  const given = process.env.DSH_PYTHON;
  if (given) {
    if (!(await fits(given)))
      throw new Error(
        `DSH_PYTHON=${given} is not Python 3.11+ with httpx, websockets, pip, setuptools and mypy`,
      );
    return given;
  }
  for (const python of await candidates()) if (await fits(python)) return python;
  const want = `Python 3.11+ with httpx, websockets, pip, setuptools and mypy (Debian: apt-get install ${PYTHON_PACKAGES.join(' ')})`;
  if (process.getuid?.() !== 0 || !existsSync('/etc/debian_version'))
    throw new Error(`no ${want}, for the Python client's tests; or set DSH_PYTHON`);
  log(
    `no Python with httpx: installing Debian ${PYTHON_PACKAGES.join(' ')} for the Python client (one time) ...`,
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env, inherit: true });
  const install = await run(
    'apt-get',
    ['install', '-y', '-qq', '--no-install-recommends', ...PYTHON_PACKAGES],
    {
      env,
      inherit: true,
    },
  );
  if (install.code === 0) for (const python of await candidates()) if (await fits(python)) return python;
  throw new Error(`apt-get install ${PYTHON_PACKAGES.join(' ')} failed; install ${want} by hand`);
};
