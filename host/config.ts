// The one place that reads environment variables. Every setting is a row of the table in
// settings.ts (kind, default, range, help); this module reads each row's variable and hands the
// raw text to it. Precedence everywhere: explicit option > environment > default. Invalid
// configuration fails here, at start, with CONFIG_INVALID naming the setting.
import { SandboxError } from './errors.ts';
import { type Config, SETTINGS, type Setting, type SettingContext } from './settings.ts';

export type { Config } from './settings.ts';
export { ADMIN_KEY_MIN_LENGTH } from './settings.ts';

const ROWS = Object.entries(SETTINGS) as Array<[keyof Config, Setting<unknown>]>;

export const loadConfig = (
  overrides: Partial<Config> = {},
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): Config => {
  const earlier: Record<string, unknown> = {};
  const context: SettingContext = { cwd, earlier };
  for (const [key, setting] of ROWS) {
    const given = overrides[key];
    const raw = env[setting.env];
    const value =
      given !== undefined
        ? given
        : raw !== undefined && raw.trim() !== ''
          ? setting.parse(raw, context)
          : setting.fallback(context);
    earlier[key] = setting.adopt ? setting.adopt(value, context) : value;
  }
  return earlier as Config;
};

/** A port as `--port` or DSH_PORT gives it: an integer 0-65535 (0 picks a free one). */
export const portFrom = (name: string, raw: string): number => {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < 0 || value > 65535)
    throw new SandboxError('CONFIG_INVALID', `${name} must be an integer between 0 and 65535, got "${raw}"`);
  return value;
};

/** DSH_ names read by setup, tests and benchmarks, and by clients (DSH_URL, DSH_KEY, DSH_KEY_FILE), not by the service. */
const NOT_SERVICE_SETTINGS = /^DSH_(BASE_IMAGE|NODE|VERBOSE|FUZZ_[A-Z_]+|URL|KEY|KEY_FILE|PYTHON)$/;
const SERVICE_SETTINGS = new Set(ROWS.map(([, setting]) => setting.env));

/**
 * The DSH_* variables set in `env` that are no setting of the service (a typo such as DSH_PROT
 * would otherwise pass silently), but the names setup, tests and benchmarks use. For a warning at
 * start; the configuration is valid without them.
 */
export const unknownSettings = (env: NodeJS.ProcessEnv = process.env): string[] =>
  Object.keys(env)
    .filter(
      (name) => name.startsWith('DSH_') && !SERVICE_SETTINGS.has(name) && !NOT_SERVICE_SETTINGS.test(name),
    )
    .sort();
