// Which backend a DSH_DB value selects, and how a PostgreSQL URL is shown: a `postgres://` or
// `postgresql://` URL selects PostgreSQL; anything else is a libsql location (a path or a `file:`
// URL, checked by ../db.ts). A URL's password never reaches a log line or an error message.

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/** Whether `database` (DSH_DB) names a PostgreSQL database. */
export const isPostgresUrl = (database: string): boolean => POSTGRES_URL.test(database);

/** The URL with its password (in the authority or a `password` parameter) replaced by `***`. */
export const redactUrl = (url: string): string => {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
};
