// The control-plane instance's identity on a PostgreSQL store: the same `meta.instance_id` row
// as on SQLite (../instance.ts says what it is for), made by the Postgres baseline
// (pg/baseline.ts) once per database. Invariant: it never changes for a database; replicas that
// share one database share one instance id.
import { checkInstanceId } from '../instance-id.ts';
import { type PgQueries, pgGuarded } from './db.ts';

/** This store's instance id. Throws STORE_FAILED when the row is missing or damaged. */
export const pgInstanceIdOf = async (db: PgQueries): Promise<string> => {
  const row = await pgGuarded('read the instance id', () =>
    db.one<{ value: unknown }>("SELECT value FROM meta WHERE key = 'instance_id'"),
  );
  return checkInstanceId(row?.value);
};
