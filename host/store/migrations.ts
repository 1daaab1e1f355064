// Versioned schema migrations, run at start. Invariants: `schema_migrations` lists every applied
// version; each migration runs in its own BEGIN IMMEDIATE transaction and re-checks its version
// inside it (two processes starting at once apply it once); every version not applied yet is
// applied, in version order, one below the highest applied included; a database whose schema is
// newer than this code is refused, never touched. Migrations are append-only: never edit a shipped one.
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import { type Database, guarded, immediate } from './db.ts';
import { DEFAULT_INLINE_BYTES, resolveData, splitData } from './payloads.ts';
import { PG_BASELINE } from './pg/baseline.ts';
import type { PgQueries } from './pg/db.ts';
import { indexText, ownerTokens } from './search-text.ts';
import type { PayloadRef } from './types.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** Data changes that SQL alone cannot make; runs after `sql`, in the same transaction. */
  up?: (db: Database) => void;
  /**
   * The same change on PostgreSQL (pg/migrate.ts), in the same transaction as its record. Versions
   * from before the Postgres backend have none: the first version that has one is the baseline
   * (pg/baseline.ts) and creates the whole schema as it stood then. Every later version has one.
   */
  pg?: {
    sql: string;
    /** Data changes that SQL alone cannot make; runs after `sql`. */
    up?: (tx: PgQueries) => Promise<void>;
  };
}

/** Version 16 on either backend (the same SQL but for the column's type name). */
const OPEN_CALLS = (integer: string): string => `
  ALTER TABLE sessions ADD COLUMN open_calls ${integer} NOT NULL DEFAULT 0;
  UPDATE sessions SET open_calls = c.opened
  FROM (SELECT session_id, sum(CASE type WHEN 'tool.call' THEN 1 ELSE -1 END) AS opened
        FROM events WHERE type IN ('tool.call', 'tool.result') GROUP BY session_id) AS c
  WHERE c.session_id = sessions.id;
`;

/**
 * Version 3: events written before payloads existed hold their large values inline. Move them out
 * (as the event log does for new events; legacy payloads are never dropped), then count every
 * tenant's usage. Row cost as in event-log-budget.ts's rowBytes: 48 + data + refs + type + ids.
 */
const storeLegacyPayloads = (db: Database): void => {
  const large = db
    .prepare(`SELECT e.session_id AS session_id, e.seq AS seq FROM events e WHERE length(e.data) > ?`)
    .all(DEFAULT_INLINE_BYTES) as { session_id: string; seq: number }[];
  const read = db.prepare(
    `SELECT e.data AS data, coalesce(a.tenant_id, '') AS tenant_id, e.at AS at FROM events e
     LEFT JOIN agents a ON a.id = e.session_id WHERE e.session_id = ? AND e.seq = ?`,
  );
  const update = db.prepare('UPDATE events SET data = ?, refs = ? WHERE session_id = ? AND seq = ?');
  const insert = db.prepare(
    'INSERT OR IGNORE INTO payloads (tenant_id, sha256, bytes, data, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  for (const { session_id, seq } of large) {
    const row = read.all(session_id, seq)[0] as { data: string; tenant_id: string; at: number };
    const split = splitData(row.data, DEFAULT_INLINE_BYTES);
    for (const blob of split.blobs) insert.run(row.tenant_id, blob.sha256, blob.bytes, blob.json, row.at);
    update.run(split.json, JSON.stringify(split.refs), session_id, seq);
  }
  db.exec(`
    INSERT INTO tenant_log_usage (tenant_id, bytes)
    SELECT coalesce(a.tenant_id, ''),
           sum(48 + length(CAST(e.data AS BLOB)) + coalesce(length(e.refs), 0) + length(e.type)
               + coalesce(length(e.call_id), 0) + coalesce(length(e.parent_call_id), 0))
    FROM events e LEFT JOIN agents a ON a.id = e.session_id GROUP BY 1;
    INSERT INTO tenant_log_usage (tenant_id, bytes)
    SELECT tenant_id, sum(bytes) FROM payloads WHERE true GROUP BY tenant_id
    ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
  `);
};

/**
 * Version 4: before it, an agent's remote tools were its creation config's `remoteTools`, replaced
 * by the `tools` of the last `agent.remote_tools` event of its session, and every load paged the
 * whole log to find them. Read them once here, large values read back from `payloads`, into the
 * new column. Deleted agents are skipped (nothing loads them again).
 */
const backfillRemoteTools = (db: Database): void => {
  const agents = db
    .prepare(
      `SELECT a.id AS id, a.tenant_id AS tenant_id, a.config AS config, e.data AS data, e.refs AS refs
       FROM agents a LEFT JOIN events e ON e.session_id = a.id AND e.seq = (
         SELECT max(seq) FROM events WHERE session_id = a.id AND type = 'agent.remote_tools')
       WHERE a.deleted_at IS NULL`,
    )
    .all() as { id: string; tenant_id: string; config: string; data: string | null; refs: string | null }[];
  const blob = db.prepare('SELECT data FROM payloads WHERE tenant_id = ? AND sha256 = ?');
  const update = db.prepare('UPDATE agents SET remote_tools = ? WHERE id = ?');
  for (const agent of agents) {
    const created = (JSON.parse(agent.config) as { remoteTools?: unknown } | null)?.remoteTools;
    let tools = Array.isArray(created) ? created : [];
    if (agent.data !== null) {
      const refs = JSON.parse(agent.refs ?? '[]') as PayloadRef[];
      let lost = refs.some((r) => r.dropped);
      const data = resolveData(agent.data, refs, (sha256) => {
        const row = blob.all(agent.tenant_id, sha256)[0] as { data: string } | undefined;
        lost ||= row === undefined;
        return row?.data;
      }) as { tools?: JsonValue } | null;
      // A registration whose tools are not all readable any more leaves what came before it.
      if (!lost && Array.isArray(data?.tools)) tools = data.tools;
    }
    if (tools.length > 0) update.run(JSON.stringify(tools), agent.id);
  }
};

/**
 * Version 6: the full-text index of the session log. Events logged before it are indexed here,
 * as the event log indexes new ones (event-log.ts), oldest first so rowids follow the log's order.
 * Payloads are not read back: a large value of an old event is not searchable.
 */
const indexLoggedEvents = (db: Database): void => {
  const rows = db
    .prepare(
      `SELECT coalesce(a.tenant_id, '') AS tenant_id, e.session_id AS session_id, e.seq AS seq,
              e.type AS type, e.surface AS surface, e.data AS data, e.at AS at
       FROM events e LEFT JOIN agents a ON a.id = e.session_id ORDER BY e.at, e.session_id, e.seq`,
    )
    .all() as {
    tenant_id: string;
    session_id: string;
    seq: number;
    type: string;
    surface: string;
    data: string;
    at: number;
  }[];
  const entry = db.prepare(
    'INSERT INTO event_index (tenant_id, session_id, seq, type, surface, at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const tokens = db.prepare('INSERT INTO events_fts (rowid, owner, body) VALUES (?, ?, ?)');
  for (const r of rows) {
    const id = entry.run(r.tenant_id, r.session_id, r.seq, r.type, r.surface, r.at).lastInsertRowid;
    tokens.run(id, ownerTokens(r.tenant_id, r.session_id), indexText(r.type, r.data));
  }
};

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
      CREATE TABLE tenants (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        hash BLOB NOT NULL,
        prefix TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE INDEX api_keys_prefix ON api_keys(prefix);
      CREATE INDEX api_keys_tenant ON api_keys(tenant_id);
      CREATE TABLE agents (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        preset TEXT NOT NULL,
        mode TEXT NOT NULL,
        config TEXT NOT NULL,
        sandbox_id TEXT,
        created_at INTEGER NOT NULL,
        deleted_at INTEGER
      );
      CREATE INDEX agents_tenant ON agents(tenant_id, created_at);
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        agent_id TEXT,
        tenant_id TEXT,
        created_at INTEGER NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX sessions_agent ON sessions(agent_id);
      CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        surface TEXT NOT NULL,
        call_id TEXT,
        parent_call_id TEXT,
        data TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
      ) WITHOUT ROWID;
      CREATE TABLE requests (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        call_id TEXT NOT NULL,
        state TEXT NOT NULL,
        payload TEXT NOT NULL,
        answer TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        answered_at INTEGER
      );
      CREATE INDEX requests_session ON requests(session_id, state);
      CREATE INDEX requests_pending ON requests(state, expires_at);
      CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL REFERENCES agents(id),
        sandbox_job_id TEXT NOT NULL,
        command TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX jobs_agent ON jobs(agent_id, created_at);
    `,
  },
  {
    version: 2,
    name: 'instance identity',
    // One id per store, made once: the control plane labels every container and workspace it
    // creates with it, and touches only what carries it (several instances may share an engine).
    sql: `
      CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      INSERT INTO meta (key, value) VALUES ('instance_id', lower(hex(randomblob(6))));
    `,
  },
  {
    version: 3,
    name: 'event payloads stored once per tenant, log usage per tenant',
    sql: `
      ALTER TABLE events ADD COLUMN refs TEXT;
      CREATE TABLE payloads (
        tenant_id TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        data TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX payloads_key ON payloads(tenant_id, sha256);
      CREATE TABLE tenant_log_usage (
        tenant_id TEXT PRIMARY KEY,
        bytes INTEGER NOT NULL
      );
    `,
    up: storeLegacyPayloads,
  },
  {
    version: 4,
    name: 'agents keep their remote tools (read from the session log once, here)',
    sql: `ALTER TABLE agents ADD COLUMN remote_tools TEXT NOT NULL DEFAULT '[]';`,
    up: backfillRemoteTools,
  },
  {
    version: 5,
    name: 'creator plugins and their immutable packages',
    // No foreign key to agents: an agent's deletion is soft, and the service removes its plugins.
    sql: `
      CREATE TABLE plugins (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        id_prefix TEXT NOT NULL,
        current_package_id TEXT,
        running INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX plugins_owner ON plugins(tenant_id, agent_id, created_at);
      CREATE INDEX plugins_running ON plugins(running) WHERE running = 1;
      CREATE TABLE plugin_packages (
        plugin_id TEXT NOT NULL REFERENCES plugins(id) ON DELETE CASCADE,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        purpose TEXT NOT NULL,
        host_code TEXT,
        client_code TEXT,
        code_bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (plugin_id, id)
      );
    `,
  },
  {
    version: 6,
    name: 'session state: todos, plan mode and the current goal',
    // Keyed by session (an agent's id); a NULL column was never written (its owner's default applies).
    sql: `
      CREATE TABLE session_state (
        session_id TEXT PRIMARY KEY,
        todos TEXT,
        plan_mode INTEGER,
        goal TEXT,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 7,
    name: 'full-text index of the session log, and schedules',
    // events_fts is contentless (tokens only, no copy of the text); its rowid is event_index.id,
    // which says which event an entry stands for and carries what the search filters on.
    // Schedules belong to an agent; the service deletes them with it (no foreign key: agents are
    // deleted softly).
    sql: `
      CREATE TABLE event_index (
        id INTEGER PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        surface TEXT NOT NULL,
        at INTEGER NOT NULL
      );
      CREATE VIRTUAL TABLE events_fts USING fts5(owner, body, content='', columnsize=0);
      CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        kind TEXT NOT NULL,
        spec TEXT NOT NULL,
        every_ms INTEGER,
        next_at INTEGER NOT NULL,
        fired INTEGER NOT NULL DEFAULT 0,
        last_fired_at INTEGER,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX schedules_owner ON schedules(tenant_id, agent_id, created_at);
      CREATE INDEX schedules_due ON schedules(next_at);
    `,
    up: indexLoggedEvents,
  },
  {
    version: 8,
    name: 'agents keep their MCP servers (specs and the tools each listed last)',
    sql: `ALTER TABLE agents ADD COLUMN mcp_servers TEXT NOT NULL DEFAULT '[]';`,
  },
  {
    version: 9,
    name: 'skill catalogs',
    // A tenant's skill packages: the row carries what the catalog lists and SKILL.md's instructions,
    // skill_files every file of the package (SKILL.md included) as it was uploaded.
    sql: `
      CREATE TABLE skills (
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        instructions TEXT NOT NULL,
        digest TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, name)
      );
      CREATE TABLE skill_files (
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        path TEXT NOT NULL,
        mode INTEGER NOT NULL,
        content BLOB NOT NULL,
        PRIMARY KEY (tenant_id, name, path),
        FOREIGN KEY (tenant_id, name) REFERENCES skills(tenant_id, name) ON DELETE CASCADE
      );
    `,
  },
  {
    version: 10,
    name: 'child agents, teams and their mailboxes',
    // An agent made by another (subagent, spawn_teammate) keeps its links on its row; `child_runs`
    // holds what its parent sees of its work (status, last output, the host request running it);
    // `mailbox` its queued messages, in order, each delivered (read by wait_agent) at most once.
    sql: `
      ALTER TABLE agents ADD COLUMN parent_id TEXT;
      ALTER TABLE agents ADD COLUMN team_id TEXT;
      ALTER TABLE agents ADD COLUMN name TEXT;
      ALTER TABLE agents ADD COLUMN role TEXT;
      ALTER TABLE agents ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX agents_parent ON agents(parent_id) WHERE parent_id IS NOT NULL;
      CREATE INDEX agents_team ON agents(team_id) WHERE team_id IS NOT NULL;
      CREATE TABLE child_runs (
        agent_id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        parent_id TEXT NOT NULL,
        description TEXT NOT NULL,
        status TEXT NOT NULL,
        output TEXT,
        request_id TEXT,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX child_runs_status ON child_runs(status);
      CREATE TABLE mailbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        from_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        delivered_at INTEGER,
        cancelled_at INTEGER
      );
      CREATE INDEX mailbox_agent ON mailbox(agent_id, id);
    `,
  },
  {
    version: 11,
    name: 'team task boards',
    // One board per team (team_id: the lead agent's id). team_boards hands out task ids (never
    // reused, so a deleted task's id cannot come back under another subject); blocked_by and
    // write_scopes are JSON arrays; owner is an agent id. The owner index serves the write-scope
    // guard, which asks for the tasks an agent holds on every write it makes.
    sql: `
      CREATE TABLE team_boards (
        tenant_id TEXT NOT NULL,
        team_id TEXT NOT NULL,
        next_seq INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, team_id)
      );
      CREATE TABLE team_tasks (
        tenant_id TEXT NOT NULL,
        team_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        subject TEXT NOT NULL,
        description TEXT NOT NULL,
        status TEXT NOT NULL,
        owner TEXT,
        blocked_by TEXT NOT NULL,
        write_scopes TEXT NOT NULL,
        revision INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, team_id, seq)
      );
      CREATE INDEX team_tasks_owner ON team_tasks (tenant_id, owner, status);
    `,
  },
  {
    version: 12,
    name: "tenants' egress settings",
    // One JSON document per tenant (allowlist, credentials, budgets, search provider); versions 10
    // and 11 belong to other changes.
    sql: `
      CREATE TABLE tenant_egress (
        tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),
        settings TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 13,
    name: "tenants' egress interception CAs",
    // Made once per tenant at its first intercepted connection; the private key is sealed.
    sql: `
      CREATE TABLE tenant_egress_ca (
        tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),
        ca TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 14,
    name: 'count events of a session by type',
    // An agent's usage counts the tool calls of its session (GET /v1/agents/:id/usage) from this
    // index alone, never from the events table.
    sql: `
      CREATE INDEX event_index_session_type ON event_index(session_id, type);
    `,
  },
  {
    version: 15,
    name: "teammates' write grants",
    // What an agent's team lead has let it write (host/teams/board/grants.ts): set when it
    // first holds a scoped task, widened only by the lead, never dropped while the agent lives.
    sql: `
      CREATE TABLE team_write_grants (
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        scopes TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, agent_id)
      );
    `,
    // The Postgres backend starts here: its baseline creates the schema of versions 1..15 at once.
    pg: { sql: PG_BASELINE },
  },
  {
    version: 16,
    name: 'open calls per session',
    // Calls minus results per session, kept by the event writes in the statement that raises
    // last_seq, so the repair after a crash (host/tools/interrupted.ts) reads only the sessions
    // with a call left open, never the whole log. Counted here from the rows already stored, so
    // logs written before it are repaired too.
    sql: OPEN_CALLS('INTEGER'),
    pg: { sql: OPEN_CALLS('integer') },
  },
  {
    version: 17,
    name: 'call batches by idempotency key',
    // POST /v1/agents/:id/calls with an Idempotency-Key (host/store/call-batches-port.ts): one row
    // per key and agent, claimed before the batch runs, its answer stored when it settles.
    // Versions 16 and 18 belong to other changes.
    // after_seq: the session's last seq at the claim (the batch's events come after it).
    // status and body: the answer the client got, once the batch is done.
    sql: `
      CREATE TABLE call_batches (
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        state TEXT NOT NULL,
        status INTEGER,
        body TEXT,
        after_seq INTEGER NOT NULL,
        started_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, agent_id, key)
      );
      CREATE INDEX call_batches_created ON call_batches(created_at);
    `,
    pg: {
      sql: `
        CREATE TABLE call_batches (
          tenant_id text NOT NULL,
          agent_id text NOT NULL,
          key text NOT NULL,
          body_hash text NOT NULL,
          state text NOT NULL,
          status integer,
          body text,
          after_seq bigint NOT NULL,
          started_by text NOT NULL,
          created_at bigint NOT NULL,
          PRIMARY KEY (tenant_id, agent_id, key)
        );
        CREATE INDEX call_batches_created ON call_batches(created_at);
      `,
    },
  },
  {
    version: 18,
    name: 'replicas and family leases',
    // Who runs on one PostgreSQL database and who owns each agent family (host/replicas,
    // pg/leases.ts). The embedded SQLite store serves one process and never reads them; they exist
    // there too so both backends report one schema.
    sql: `
      CREATE TABLE replicas (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL
      );
      CREATE TABLE family_leases (
        family_id TEXT PRIMARY KEY,
        replica_id TEXT NOT NULL,
        epoch INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX family_leases_replica ON family_leases(replica_id);
    `,
    pg: {
      sql: `
        CREATE TABLE replicas (
          id text PRIMARY KEY,
          url text NOT NULL,
          started_at bigint NOT NULL,
          heartbeat_at bigint NOT NULL
        );
        CREATE TABLE family_leases (
          family_id text PRIMARY KEY,
          replica_id text NOT NULL,
          epoch bigint NOT NULL,
          expires_at bigint NOT NULL
        );
        CREATE INDEX family_leases_replica ON family_leases(replica_id);
      `,
    },
  },
  {
    version: 19,
    name: 'egress usage per tenant and hour',
    // The tenants' egress bytes counted centrally when replicas share a PostgreSQL database
    // (pg/limits.ts): each replica leases chunks of a tenant's hourly budget here and spends
    // them locally. window_start: hours since the epoch; granted: the last lease's amount (what the
    // upsert returns). The embedded SQLite store serves one process and counts in memory; the table
    // exists there too so both backends report one schema.
    sql: `
      CREATE TABLE egress_usage (
        tenant_id TEXT NOT NULL,
        window_start INTEGER NOT NULL,
        used INTEGER NOT NULL,
        granted INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, window_start)
      );
    `,
    pg: {
      sql: `
        CREATE TABLE egress_usage (
          tenant_id text NOT NULL,
          window_start bigint NOT NULL,
          used bigint NOT NULL,
          granted bigint NOT NULL,
          PRIMARY KEY (tenant_id, window_start)
        );
      `,
    },
  },
  {
    version: 20,
    name: 'paused agents and tenant settings',
    // An agent paused (POST /v1/agents/:id/pause, or idle past its tenant's setting): JSON
    // {mode, at, by}, NULL while it runs; kept across restarts, so a paused agent stays paused.
    // tenant_settings: one JSON document per tenant (host/agents/tenant-settings.ts owns its
    // meaning: today the pause settings).
    sql: `
      ALTER TABLE agents ADD COLUMN paused TEXT;
      CREATE TABLE tenant_settings (
        tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),
        settings TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
    pg: {
      sql: `
        ALTER TABLE agents ADD COLUMN paused text;
        CREATE TABLE tenant_settings (
          tenant_id text PRIMARY KEY REFERENCES tenants(id),
          settings text NOT NULL,
          updated_at bigint NOT NULL
        );
      `,
    },
  },
  {
    version: 21,
    name: 'tenant lifecycle: named keys with expiry, tenant deletion state, quotas',
    // Several keys per tenant, each with a name and an optional expiry (tenants.ts); a tenant's
    // deletion is durable (state 'deleting' until host/tenants/deletion.ts finished, then
    // 'deleted'), so a service that crashed in the middle resumes it at start; the operator's
    // quotas of a tenant (JSON, tenants-port.ts TenantQuotas; NULL: the service's defaults).
    sql: `
      ALTER TABLE api_keys ADD COLUMN name TEXT;
      ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
      ALTER TABLE tenants ADD COLUMN state TEXT NOT NULL DEFAULT 'active';
      ALTER TABLE tenants ADD COLUMN deleting_since INTEGER;
      ALTER TABLE tenants ADD COLUMN deleted_at INTEGER;
      ALTER TABLE tenants ADD COLUMN quotas TEXT;
      CREATE INDEX tenants_state ON tenants(state);
    `,
    pg: {
      sql: `
        ALTER TABLE api_keys ADD COLUMN name text;
        ALTER TABLE api_keys ADD COLUMN expires_at bigint;
        ALTER TABLE tenants ADD COLUMN state text NOT NULL DEFAULT 'active';
        ALTER TABLE tenants ADD COLUMN deleting_since bigint;
        ALTER TABLE tenants ADD COLUMN deleted_at bigint;
        ALTER TABLE tenants ADD COLUMN quotas text;
        CREATE INDEX tenants_state ON tenants(state);
      `,
    },
  },
  {
    version: 22,
    name: 'nodes: the node of each agent, runtime cordons',
    // Which node holds each agent's sandbox and workspace (host/sandbox/nodes/placement.ts), so a
    // restarted control plane, or another replica, sends the agent back to the node with its files
    // even when that node is down or its container is gone; nodes an operator cordoned at run time
    // (POST /v1/nodes/:name/cordon, `dsh-sandbox nodes cordon`), kept across restarts.
    sql: `
      CREATE TABLE agent_nodes (
        agent_id TEXT PRIMARY KEY,
        node TEXT NOT NULL,
        placed_at INTEGER NOT NULL
      );
      CREATE INDEX agent_nodes_node ON agent_nodes(node);
      CREATE TABLE node_cordons (
        node TEXT PRIMARY KEY,
        cordoned_at INTEGER NOT NULL
      );
    `,
    pg: {
      sql: `
        CREATE TABLE agent_nodes (
          agent_id text PRIMARY KEY,
          node text NOT NULL,
          placed_at bigint NOT NULL
        );
        CREATE INDEX agent_nodes_node ON agent_nodes(node);
        CREATE TABLE node_cordons (
          node text PRIMARY KEY,
          cordoned_at bigint NOT NULL
        );
      `,
    },
  },
  {
    version: 23,
    name: 'workspace snapshots',
    // A snapshot of an agent's workspace (host/store/snapshots.ts): its file lives on `node`
    // (host/sandbox/docker/workspaces/loop-snapshots.ts); `bytes` is the host disk it takes, which
    // the tenant's `snapshotBytes` quota counts. Kept when its agent is deleted.
    sql: `
      CREATE TABLE snapshots (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        agent_id TEXT NOT NULL,
        node TEXT NOT NULL,
        size_bytes INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX snapshots_tenant_agent ON snapshots(tenant_id, agent_id);
    `,
    pg: {
      sql: `
        CREATE TABLE snapshots (
          id text PRIMARY KEY,
          tenant_id text NOT NULL REFERENCES tenants(id),
          agent_id text NOT NULL,
          node text NOT NULL,
          size_bytes bigint NOT NULL,
          bytes bigint NOT NULL,
          created_at bigint NOT NULL
        );
        CREATE INDEX snapshots_tenant_agent ON snapshots(tenant_id, agent_id);
      `,
    },
  },
  {
    version: 24,
    name: 'log retention: where a session log starts, how many events use each payload',
    // Retention (host/tenants/retention.ts) removes a prefix of a session's events: first_seq is
    // the first seq kept (1 until something was removed). A payload is used by the events whose
    // refs name it (once per event; a dropped ref names no stored payload): `uses` counts them, kept
    // by the event writes, so the payload goes with the last event that used it. The index finds a
    // session's oldest index entries without reading the rest.
    sql: `
      ALTER TABLE sessions ADD COLUMN first_seq INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE payloads ADD COLUMN uses INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX event_index_session_seq ON event_index(session_id, seq);
      UPDATE payloads SET uses = c.n FROM (
        SELECT coalesce(a.tenant_id, '') AS tenant_id, r.sha AS sha256, count(*) AS n FROM (
          SELECT DISTINCT e.session_id AS session_id, e.seq AS seq, json_extract(j.value, '$.sha256') AS sha
          FROM events e, json_each(e.refs) j
          WHERE e.refs IS NOT NULL AND coalesce(json_extract(j.value, '$.dropped'), 0) = 0) r
        LEFT JOIN agents a ON a.id = r.session_id GROUP BY 1, 2) AS c
      WHERE c.tenant_id = payloads.tenant_id AND c.sha256 = payloads.sha256;
    `,
    pg: {
      sql: `
        ALTER TABLE sessions ADD COLUMN first_seq bigint NOT NULL DEFAULT 1;
        ALTER TABLE payloads ADD COLUMN uses bigint NOT NULL DEFAULT 0;
        CREATE INDEX event_index_session_seq ON event_index(session_id, seq);
        UPDATE payloads p SET uses = c.n FROM (
          SELECT coalesce(a.tenant_id, '') AS tenant_id, r.sha, count(*) AS n FROM (
            SELECT DISTINCT e.session_id, e.seq, j->>'sha256' AS sha
            FROM events e, jsonb_array_elements(e.refs::jsonb) j
            WHERE e.refs IS NOT NULL AND coalesce((j->>'dropped')::boolean, false) = false) r
          LEFT JOIN agents a ON a.id = r.session_id GROUP BY 1, 2) c
        WHERE c.tenant_id = p.tenant_id AND c.sha = p.sha256;
      `,
    },
  },
  {
    version: 25,
    name: 'tenant quotas read without every tenant',
    // The quota cache (host/tenants/quota-cache.ts) reads the active tenants' quotas every few
    // seconds (TenantStore.listQuotas): this index holds only the tenants that have quotas, so
    // that read costs them, not the thousands of tenants without any.
    sql: `CREATE INDEX tenants_with_quotas ON tenants(state, id) WHERE quotas IS NOT NULL;`,
    pg: {
      sql: `CREATE INDEX tenants_with_quotas ON tenants(state, id) WHERE quotas IS NOT NULL;`,
    },
  },
  {
    version: 26,
    name: 'due schedules read in turns across tenants',
    // ScheduleStore.due() (schedules-rows.ts dueInTurns) skips along this index from tenant to
    // tenant and reads each one's soonest due schedules off it: a read costs the tenants that have
    // schedules, not a sort of every due row.
    sql: `CREATE INDEX schedules_tenant_due ON schedules(tenant_id, next_at);`,
    pg: { sql: `CREATE INDEX schedules_tenant_due ON schedules(tenant_id, next_at);` },
  },
];

export const latestSchemaVersion = (migrations: readonly Migration[] = MIGRATIONS): number =>
  migrations.reduce((max, m) => Math.max(max, m.version), 0);

/** The highest applied version, 0 for a fresh database. */
export const schemaVersion = (db: Database): number =>
  guarded('read schema version', () => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const row = db.prepare('SELECT max(version) AS v FROM schema_migrations').all()[0] as {
      v: number | null;
    };
    return row.v ?? 0;
  });

/** CONFIG_INVALID: the database was written by a build that knows later migrations (every backend). */
export const newerSchema = (current: number, latest: number): SandboxError =>
  new SandboxError(
    'CONFIG_INVALID',
    `the database schema is version ${current} but this build knows only up to ${latest}; ` +
      'upgrade dsh-sandbox or point it at another data directory',
    { data: { schemaVersion: current, supportedVersion: latest } },
  );

/**
 * Brings the schema up to date. Returns the versions applied now. Throws CONFIG_INVALID when the
 * database was written by newer code, STORE_FAILED (with the migration named) when one fails.
 */
export const migrate = (db: Database, migrations: readonly Migration[] = MIGRATIONS): number[] => {
  const latest = latestSchemaVersion(migrations);
  const current = schemaVersion(db);
  if (current > latest) {
    throw newerSchema(current, latest);
  }
  const applied: number[] = [];
  const has = db.prepare('SELECT 1 AS x FROM schema_migrations WHERE version = ?');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  // By version, not only past the highest: a version below it that is missing (branches that took
  // numbers in a different order than they merged) is applied too.
  const done = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(migration.version)) continue;
    guarded(`migration ${migration.version} (${migration.name})`, () =>
      immediate(db, () => {
        if (has.all(migration.version).length > 0) return;
        db.exec(migration.sql);
        migration.up?.(db);
        record.run(migration.version, migration.name, Date.now());
        applied.push(migration.version);
      }),
    );
  }
  return applied;
};
