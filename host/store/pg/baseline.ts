// The PostgreSQL schema as it stood at migration 15, the version the Postgres backend was born
// at: the `pg` step of that migration (../migrations.ts), run once on an empty database. Versions
// 1..14 carry no pg step; on Postgres they are recorded as covered by this one. Every later
// migration carries its own pg step beside its SQLite SQL.
// Invariants, checked by tests/unit/store/migrations-both.test.ts: the same tables, in the same
// column order, and the same index names as SQLite's schema after migration 15, apart from
//   - SQLite's full-text table `events_fts` (FTS5, contentless: owner tokens and body tokens,
//     rowid = event_index.id) and its shadow tables: on Postgres the tokens live in
//     `event_index.search`, a tsvector with the GIN index `event_index_search`. One row per event
//     instead of two; a search reads one table. Writers fill it as
//       setweight(to_tsvector('simple', <ownerTokens>), 'A') || setweight(to_tsvector('simple', <indexText>), 'D')
//     ('simple': no stemming, no stop words, like FTS5's unicode61), and a search binds its tenant
//     inside the tsquery too (`'t<hex>':A & …`), as the FTS5 expression does with `owner :`;
//   - a `rowid` column (identity) on the tables whose reads order by SQLite's implicit rowid
//     (`ORDER BY created_at, rowid`): tenants, api_keys, agents, requests, plugins,
//     plugin_packages, schedules. The same SQL orders rows created in one millisecond by insertion
//     on both backends.
// Types: INTEGER epoch ms, counters, sequence numbers and sizes → bigint (pg/db.ts reads them as
// numbers); INTEGER flags and small values (running, plan_mode, fired, depth, mode) → integer;
// TEXT → text (JSON stays text: stored and counted byte for byte as on SQLite); BLOB → bytea;
// INTEGER PRIMARY KEY and AUTOINCREMENT → bigint identity (never reused). Constraint names are
// Postgres's defaults (<table>_pkey, <table>_<column>_fkey); SQLite's are unnamed.
// Append-only like every shipped migration: never edit it once released; change the schema with a
// new migration that carries both steps.

export const PG_BASELINE_VERSION = 15;

export const PG_BASELINE = `
CREATE TABLE tenants (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at bigint NOT NULL,
  rowid bigint GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE api_keys (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants(id),
  hash bytea NOT NULL,
  prefix text NOT NULL,
  created_at bigint NOT NULL,
  revoked_at bigint,
  rowid bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX api_keys_prefix ON api_keys(prefix);
CREATE INDEX api_keys_tenant ON api_keys(tenant_id);
CREATE TABLE agents (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES tenants(id),
  preset text NOT NULL,
  mode text NOT NULL,
  config text NOT NULL,
  sandbox_id text,
  created_at bigint NOT NULL,
  deleted_at bigint,
  remote_tools text NOT NULL DEFAULT '[]',
  mcp_servers text NOT NULL DEFAULT '[]',
  parent_id text,
  team_id text,
  name text,
  role text,
  depth integer NOT NULL DEFAULT 0,
  rowid bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX agents_tenant ON agents(tenant_id, created_at);
CREATE INDEX agents_parent ON agents(parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX agents_team ON agents(team_id) WHERE team_id IS NOT NULL;
CREATE TABLE sessions (
  id text PRIMARY KEY,
  agent_id text,
  tenant_id text,
  created_at bigint NOT NULL,
  last_seq bigint NOT NULL DEFAULT 0
);
CREATE INDEX sessions_agent ON sessions(agent_id);
CREATE TABLE events (
  session_id text NOT NULL REFERENCES sessions(id),
  seq bigint NOT NULL,
  type text NOT NULL,
  surface text NOT NULL,
  call_id text,
  parent_call_id text,
  data text NOT NULL,
  at bigint NOT NULL,
  refs text,
  PRIMARY KEY (session_id, seq)
);
CREATE TABLE requests (
  id text PRIMARY KEY,
  session_id text NOT NULL,
  kind text NOT NULL,
  call_id text NOT NULL,
  state text NOT NULL,
  payload text NOT NULL,
  answer text,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  answered_at bigint,
  rowid bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX requests_session ON requests(session_id, state);
CREATE INDEX requests_pending ON requests(state, expires_at);
CREATE TABLE jobs (
  id text PRIMARY KEY,
  agent_id text NOT NULL REFERENCES agents(id),
  sandbox_job_id text NOT NULL,
  command text NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX jobs_agent ON jobs(agent_id, created_at);
CREATE TABLE meta (
  key text PRIMARY KEY,
  value text NOT NULL
);
-- 48 random bits as 12 hex digits, as SQLite's lower(hex(randomblob(6))): gen_random_uuid() is
-- core since PostgreSQL 13 (no pgcrypto), and its first 12 hex digits are all random.
INSERT INTO meta (key, value) VALUES ('instance_id', substr(replace(gen_random_uuid()::text, '-', ''), 1, 12));
CREATE TABLE payloads (
  tenant_id text NOT NULL,
  sha256 text NOT NULL,
  bytes bigint NOT NULL,
  data text NOT NULL,
  created_at bigint NOT NULL
);
CREATE UNIQUE INDEX payloads_key ON payloads(tenant_id, sha256);
CREATE TABLE tenant_log_usage (
  tenant_id text PRIMARY KEY,
  bytes bigint NOT NULL
);
CREATE TABLE plugins (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  agent_id text NOT NULL,
  id_prefix text NOT NULL,
  current_package_id text,
  running integer NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  rowid bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX plugins_owner ON plugins(tenant_id, agent_id, created_at);
CREATE INDEX plugins_running ON plugins(running) WHERE running = 1;
CREATE TABLE plugin_packages (
  plugin_id text NOT NULL REFERENCES plugins(id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  purpose text NOT NULL,
  host_code text,
  client_code text,
  code_bytes bigint NOT NULL,
  created_at bigint NOT NULL,
  rowid bigint GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (plugin_id, id)
);
CREATE TABLE session_state (
  session_id text PRIMARY KEY,
  todos text,
  plan_mode integer,
  goal text,
  updated_at bigint NOT NULL
);
CREATE TABLE event_index (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  session_id text NOT NULL,
  seq bigint NOT NULL,
  type text NOT NULL,
  surface text NOT NULL,
  at bigint NOT NULL,
  search tsvector NOT NULL
);
CREATE INDEX event_index_session_type ON event_index(session_id, type);
CREATE INDEX event_index_search ON event_index USING gin (search);
CREATE TABLE schedules (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  agent_id text NOT NULL,
  prompt text NOT NULL,
  kind text NOT NULL,
  spec text NOT NULL,
  every_ms bigint,
  next_at bigint NOT NULL,
  fired integer NOT NULL DEFAULT 0,
  last_fired_at bigint,
  created_at bigint NOT NULL,
  rowid bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX schedules_owner ON schedules(tenant_id, agent_id, created_at);
CREATE INDEX schedules_due ON schedules(next_at);
CREATE TABLE skills (
  tenant_id text NOT NULL REFERENCES tenants(id),
  name text NOT NULL,
  description text NOT NULL,
  instructions text NOT NULL,
  digest text NOT NULL,
  bytes bigint NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, name)
);
CREATE TABLE skill_files (
  tenant_id text NOT NULL,
  name text NOT NULL,
  path text NOT NULL,
  mode integer NOT NULL,
  content bytea NOT NULL,
  PRIMARY KEY (tenant_id, name, path),
  FOREIGN KEY (tenant_id, name) REFERENCES skills(tenant_id, name) ON DELETE CASCADE
);
CREATE TABLE child_runs (
  agent_id text PRIMARY KEY,
  tenant_id text NOT NULL,
  parent_id text NOT NULL,
  description text NOT NULL,
  status text NOT NULL,
  output text,
  request_id text,
  updated_at bigint NOT NULL
);
CREATE INDEX child_runs_status ON child_runs(status);
CREATE TABLE mailbox (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  agent_id text NOT NULL,
  from_id text NOT NULL,
  kind text NOT NULL,
  body text NOT NULL,
  created_at bigint NOT NULL,
  delivered_at bigint,
  cancelled_at bigint
);
CREATE INDEX mailbox_agent ON mailbox(agent_id, id);
CREATE TABLE team_boards (
  tenant_id text NOT NULL,
  team_id text NOT NULL,
  next_seq bigint NOT NULL,
  PRIMARY KEY (tenant_id, team_id)
);
CREATE TABLE team_tasks (
  tenant_id text NOT NULL,
  team_id text NOT NULL,
  seq bigint NOT NULL,
  subject text NOT NULL,
  description text NOT NULL,
  status text NOT NULL,
  owner text,
  blocked_by text NOT NULL,
  write_scopes text NOT NULL,
  revision bigint NOT NULL,
  created_by text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, team_id, seq)
);
CREATE INDEX team_tasks_owner ON team_tasks(tenant_id, owner, status);
CREATE TABLE tenant_egress (
  tenant_id text PRIMARY KEY REFERENCES tenants(id),
  settings text NOT NULL,
  updated_at bigint NOT NULL
);
CREATE TABLE tenant_egress_ca (
  tenant_id text PRIMARY KEY REFERENCES tenants(id),
  ca text NOT NULL,
  created_at bigint NOT NULL
);
CREATE TABLE team_write_grants (
  tenant_id text NOT NULL,
  agent_id text NOT NULL,
  scopes text NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, agent_id)
);
`;
