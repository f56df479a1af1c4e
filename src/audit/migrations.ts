/**
 * Versioned migrations of the audit schema, and the small runner that applies them.
 *
 * Why a runner of our own rather than a migration tool: the well-kept tools (node-pg-migrate, the most used
 * one for pg) load migrations as files from a folder at run time, through a TypeScript loader and a CLI
 * stack (yargs, jiti, glob). tether runs migrations on every worker start, from the compiled package and
 * from a Temporal plugin inside someone else's Worker, where a folder of loose files next to the code is
 * fragile. Here the migrations are constants compiled into the module, and PostgreSQL itself provides
 * what a tool would: transactional DDL (all pending migrations apply or none do), and an advisory lock
 * that makes workers starting at once apply each migration exactly once. Each applied migration is
 * recorded with a checksum, so an edit to a migration that already ran is refused instead of drifting.
 *
 * Rules for adding one: append with the next version, never edit or reorder an applied one. A statement
 * that cannot run in a transaction (CREATE INDEX CONCURRENTLY) does not belong here.
 */
import { createHash } from 'node:crypto'
import type pg from 'pg'
import { AuditMigrationError } from './errors.js'

export interface Migration {
  version: number
  name: string
  sql: string
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'audit tables',
    sql: `
create table runs (
  run_id        text primary key,
  goal          text not null,
  workspace     text not null,
  contract      json not null,
  policy        json not null,
  task_queue    text,
  parent_run_id text,
  status        text not null default 'running' check (status in ('running', 'finished')),
  outcome       text,
  reason        text,
  steps         integer,
  input_tokens  bigint,
  output_tokens bigint,
  started_at    timestamptz not null,
  finished_at   timestamptz,
  check ((status = 'finished') = (finished_at is not null))
);
create index runs_newest on runs (started_at desc, run_id desc);
create index runs_status_newest on runs (status, started_at desc, run_id desc);
create index runs_parent on runs (parent_run_id) where parent_run_id is not null;

create table steps (
  run_id        text not null references runs (run_id) on delete cascade,
  step          integer not null check (step >= 0),
  tool_calls    json not null,
  decision      text not null,
  observation   text not null,
  input_tokens  integer not null,
  output_tokens integer not null,
  started_at    timestamptz not null,
  finished_at   timestamptz not null,
  primary key (run_id, step)
);

create table policy_events (
  id          bigint generated always as identity,
  run_id      text not null references runs (run_id) on delete cascade,
  step        integer not null,
  call        integer not null,
  kind        text not null check (kind in ('refusal', 'decision')),
  source      text not null,
  act         text not null check (act in ('read', 'write', 'exec', 'net')),
  target      text not null,
  effect      text not null check (effect in ('allow', 'ask', 'deny')),
  rule        text,
  layer       text,
  decided_by  text,
  reason      text not null,
  checks      json,
  at          timestamptz not null,
  refused     boolean generated always as (kind = 'refusal' or effect = 'deny') stored,
  primary key (run_id, step, call, kind, source)
);
create index policy_events_refused_newest on policy_events (at desc, id desc) where refused;
create index policy_events_run_refused_newest on policy_events (run_id, at desc, id desc) where refused;

create table exec_results (
  run_id         text not null references runs (run_id) on delete cascade,
  step           integer not null,
  call           integer not null,
  attempt        integer not null check (attempt >= 1),
  argv           text[] not null,
  cwd            text not null,
  status         text not null
                 check (status in ('exited', 'signalled', 'timed-out', 'cancelled', 'unavailable')),
  exit_code      integer,
  signal         text,
  duration_ms    bigint not null,
  stdout_text    text not null,
  stdout_elided  bigint not null,
  stdout_bytes   bigint not null,
  stdout_lines   bigint not null,
  stdout_sha256  text not null,
  stderr_text    text not null,
  stderr_elided  bigint not null,
  stderr_bytes   bigint not null,
  stderr_lines   bigint not null,
  stderr_sha256  text not null,
  started_at     timestamptz not null,
  finished_at    timestamptz not null,
  primary key (run_id, step, call)
);
create index exec_results_newest on exec_results (started_at desc);

create table gate_events (
  run_id  text not null references runs (run_id) on delete cascade,
  step    integer not null,
  kind    text not null check (kind in ('gate_output', 'gate_phase_failed', 'gate_passed')),
  detail  text not null,
  at      timestamptz not null,
  primary key (run_id, step, kind)
);

create table approvals (
  approval_id   text primary key,
  run_id        text not null references runs (run_id) on delete cascade,
  step          integer not null,
  call          integer not null,
  act           text not null check (act in ('read', 'write', 'exec', 'net')),
  target        text not null,
  tree          json not null,
  rule          text,
  layer         text,
  approvers     text[] not null default '{}',
  requested_at  timestamptz not null,
  deadline      timestamptz not null,
  decision      text check (decision in ('approved', 'denied', 'timeout', 'cancelled')),
  decided_by    text,
  channel       text check (channel in ('update', 'signal', 'timeout', 'cancel')),
  decided_at    timestamptz,
  reason        text,
  remember      text,
  check ((decision is null) = (decided_at is null))
);
create index approvals_pending on approvals (requested_at, approval_id) where decision is null;
create index approvals_run on approvals (run_id, requested_at);
create index approvals_decided on approvals (decided_at desc) where decision is not null;

create table messages (
  run_id   text not null references runs (run_id) on delete cascade,
  seq      integer not null check (seq >= 0),
  role     text,
  content  json not null,
  attempt  integer not null default 1 check (attempt >= 1),
  primary key (run_id, seq)
);
`,
  },
  {
    version: 2,
    name: 'sandbox records',
    sql: `
-- The sandbox mode a run's policy asked for ('enforce' or 'off'); null for runs recorded before it existed.
alter table runs add column sandbox text check (sandbox in ('enforce', 'off'));
-- What the sandbox saw of a command: the environment variable names passed (never values), its limits,
-- the limit it hit and the network destinations it asked for.
alter table exec_results add column sandbox json;
`,
  },
  {
    version: 3,
    name: 'approver identity',
    sql: `
-- What a signature covers (sha256 of act, target and tree), how many distinct approvers an ask needs,
-- what "remember" was offered before anyone answered, and whether answers had to be signed.
alter table approvals add column action_digest text;
alter table approvals add column approvals_required integer not null default 1 check (approvals_required >= 1);
alter table approvals add column remember_offer json;
alter table approvals add column identity text check (identity in ('signed', 'unsigned'));

-- Every answer that counted, one per approver, with its proof: offline re-verification needs the statement,
-- the signature and the public key (which must also be on the run's recorded policy).
create table approval_answers (
  approval_id     text not null references approvals (approval_id) on delete cascade,
  approver        text not null,
  decision        text not null check (decision in ('approve', 'deny')),
  channel         text not null check (channel in ('update', 'signal')),
  answered_at     timestamptz not null,
  reason          text,
  remember        text,
  key_fingerprint text,
  public_key      text,
  signature       text,
  statement       json,
  check ((signature is null) = (statement is null)),
  primary key (approval_id, approver)
);
`,
  },
  {
    version: 4,
    name: 'run integrity',
    sql: `
-- Which execution a run id belongs to (Temporal's first run id of the chain): a run id is never reused,
-- and nothing of another execution can overwrite a run's rows.
alter table runs add column execution_id text;

-- The verification gate's commands are in "what ran" too (call -1 of their step).
alter table exec_results add column kind text not null default 'tool' check (kind in ('tool', 'gate'));

-- Every attempt of every command, with when it started, when it was last seen alive and when it ended:
-- a retried command never starts before the attempt before it is gone, and the audit shows both.
create table exec_attempts (
  run_id     text not null references runs (run_id) on delete cascade,
  step       integer not null,
  call       integer not null,
  attempt    integer not null check (attempt >= 1),
  worker     text not null,
  started_at timestamptz not null,
  alive_at   timestamptz not null,
  ended_at   timestamptz,
  outcome    text,
  primary key (run_id, step, call, attempt)
);
`,
  },
  {
    version: 5,
    name: 'cluster a finished run',
    // A running run's rows are written a step at a time, between other runs' rows, so reading one run
    // touched about one heap page per row. When a run finishes, its rows are rewritten together in timeline
    // order, so the per-run reads (runTimeline above all) touch a few pages. Moving a row keeps its values,
    // including the policy event ids that paging cursors hold. approvals stay where they are: a run has few,
    // and approval_answers would lose its rows to the cascade of their delete. policy_events names its
    // columns (its id and generated column need it): a migration that adds one there must replace this
    // function, and one that makes another table reference a moved table must leave that table out.
    sql: `
create function tether_cluster_run(moving_run text) returns void language sql as $$
  with moved as (delete from steps where run_id = moving_run returning *)
    insert into steps select * from moved order by step;
  with moved as (delete from policy_events where run_id = moving_run returning *)
    insert into policy_events (id, run_id, step, call, kind, source, act, target, effect, rule, layer,
                               decided_by, reason, checks, at)
    overriding system value
    select id, run_id, step, call, kind, source, act, target, effect, rule, layer, decided_by, reason, checks, at
      from moved order by step, call, at, id;
  with moved as (delete from exec_results where run_id = moving_run returning *)
    insert into exec_results select * from moved order by step, call;
  with moved as (delete from gate_events where run_id = moving_run returning *)
    insert into gate_events select * from moved order by step, at;
  with moved as (delete from messages where run_id = moving_run returning *)
    insert into messages select * from moved order by seq;
$$;
`,
  },
  {
    version: 6,
    name: 'approved replacement commands',
    sql: `
-- The edited command the approvers approved instead of the asked one (exec only): the asked command stays in
-- target and tree, the one that ran is in exec_results, and each signed statement covers this argv.
alter table approvals add column replacement text[];
`,
  },
  {
    version: 7,
    name: 'effective policies',
    sql: `
-- The policies runs work under (the worker's floor with the run's own policy stacked on it), by the digest that
-- names them in Temporal history. Content-addressed: a row edited after the fact no longer matches its name,
-- and workers refuse it.
create table policies (
  digest      text primary key check (digest ~ '^[0-9a-f]{64}$'),
  spec        jsonb not null,
  recorded_at timestamptz not null default now()
);
-- runs.policy stays the run's own policy as its starter gave it; these name the effective one and its floor.
alter table runs add column policy_digest text references policies (digest);
alter table runs add column floor text;
`,
  },
  {
    version: 8,
    name: 'worker builds',
    sql: `
-- The Worker Deployment build a run started on (Worker Versioning pins it there); null without versioning.
alter table runs add column build_id text;
`,
  },
  {
    version: 9,
    name: 'mcp tools and calls',
    sql: `
-- A call of an MCP server's tool is an act of its own.
alter table policy_events drop constraint policy_events_act_check;
alter table policy_events add constraint policy_events_act_check
  check (act in ('read', 'write', 'exec', 'net', 'mcp'));
alter table approvals drop constraint approvals_act_check;
alter table approvals add constraint approvals_act_check
  check (act in ('read', 'write', 'exec', 'net', 'mcp'));

-- MCP tool definitions (name, description, input schema, annotations) by the digest runs pin them with.
-- Content-addressed like policies: a row edited after the fact no longer matches its name, and is refused.
create table mcp_definitions (
  digest      text primary key check (digest ~ '^[0-9a-f]{64}$'),
  definition  jsonb not null,
  recorded_at timestamptz not null default now()
);
-- Every definition each run's listings saw, from the step it was first seen.
create table mcp_tools (
  run_id  text not null references runs (run_id) on delete cascade,
  name    text not null,
  digest  text not null references mcp_definitions (digest),
  step    integer not null,
  seen_at timestamptz not null,
  primary key (run_id, name, digest)
);
-- Every MCP call that was made: which tool of which server, a digest of its arguments (the arguments
-- themselves are in the transcript and, for refusals and approvals, in policy_events and approvals), the
-- verdict that let it run, and its result bounded like a command's output.
create table mcp_calls (
  run_id           text not null references runs (run_id) on delete cascade,
  step             integer not null,
  call             integer not null,
  attempt          integer not null default 1 check (attempt >= 1),
  server           text not null,
  tool             text not null,
  digest           text not null,
  arguments_sha256 text not null check (arguments_sha256 ~ '^[0-9a-f]{64}$'),
  arguments_bytes  integer not null,
  effect           text not null check (effect in ('allow', 'ask')),
  rule             text,
  layer            text,
  status           text not null
                   check (status in ('ok', 'error', 'withheld', 'unavailable', 'timed-out', 'cancelled')),
  result_bytes     bigint not null,
  result_sha256    text not null check (result_sha256 ~ '^[0-9a-f]{64}$'),
  result_text      text not null,
  result_elided    integer not null,
  duration_ms      integer not null,
  started_at       timestamptz not null,
  finished_at      timestamptz not null,
  primary key (run_id, step, call)
);
`,
  },
  {
    version: 10,
    name: 'workspace snapshots',
    sql: `
-- Snapshot objects (files, chunks, links and folders of workspace trees), named by the SHA-256 of their bytes:
-- the default snapshot store. Shared by every run, so a file kept by a thousand steps is stored once.
create table snapshot_objects (
  hash       text primary key check (hash ~ '^[0-9a-f]{64}$'),
  data       bytea not null,
  size       integer not null,
  created_at timestamptz not null default now()
);

-- The workspace's tree after every step that could change it (kind tool or gate, call -1 for the gate), when
-- the run started (step 0, kind start), and when it was found changed outside the run (kind outside-edit).
-- Rows stay after retention has collected the objects (collected_at): the hash still proves what was.
create table workspace_snapshots (
  run_id        text not null references runs (run_id) on delete cascade,
  step          integer not null check (step >= 0),
  call          integer not null,
  kind          text not null check (kind in ('start', 'tool', 'gate', 'outside-edit')),
  id            bigint generated always as identity,
  root          text not null check (root ~ '^[0-9a-f]{64}$'),
  store         text not null,
  files         integer not null,
  bytes         bigint not null,
  new_objects   integer not null,
  new_bytes     bigint not null,
  detail        text,
  taken_at      timestamptz not null,
  collected_at  timestamptz,
  primary key (run_id, step, call, kind)
);
create index workspace_snapshots_root on workspace_snapshots (root);

-- Commands tether itself runs on a workspace (a source's clone and checkout, a cache's rebuild on a new worker)
-- are in "what ran" too, as calls below -1 of their step.
alter table exec_results drop constraint exec_results_kind_check;
alter table exec_results add constraint exec_results_kind_check check (kind in ('tool', 'gate', 'workspace'));

-- Bumped by every collection: a worker that remembers which objects a store holds forgets it when this moves.
create table snapshot_collections (
  id          integer primary key check (id = 1),
  generation  bigint not null,
  ran_at      timestamptz not null
);
`,
  },
  {
    version: 11,
    name: 'commands cut off',
    sql: `
-- A command a lost or stopping worker cut off, and which was not run again (it is on the run's noRetry list),
-- is in "what ran" too: status 'unknown', started when the attempt that ran it started.
alter table exec_results drop constraint exec_results_status_check;
alter table exec_results add constraint exec_results_status_check
  check (status in ('exited', 'signalled', 'timed-out', 'cancelled', 'unavailable', 'unknown'));
`,
  },
  {
    version: 12,
    name: 'model costs, budget approvals and provenance',
    sql: `
-- What each model turn cost in US dollars (exact to the micro-dollar; NULL: the model had no price), the
-- model it asked (a provider id, what it was priced as) and its prompt-cache reads; and the run's total.
alter table steps add column model text;
alter table steps add column cached_input_tokens integer check (cached_input_tokens >= 0);
alter table steps add column cost_usd numeric(20, 6) check (cost_usd >= 0);
alter table runs add column cost_usd numeric(20, 6) check (cost_usd >= 0);
-- A run at its cost cap waits for a budget approver: an approval with act 'budget' and call -1, whose
-- approval raises the cap to raise_to (as the approver signed it) and whose denial ends the run.
alter table approvals drop constraint approvals_act_check;
alter table approvals add constraint approvals_act_check
  check (act in ('read', 'write', 'exec', 'net', 'mcp', 'budget'));
alter table approvals add column raise_to text;
alter table policy_events drop constraint policy_events_act_check;
alter table policy_events add constraint policy_events_act_check
  check (act in ('read', 'write', 'exec', 'net', 'mcp', 'budget'));
-- Each finished run's provenance: an in-toto Statement in a DSSE envelope, signed by the worker's key (keyid),
-- naming the final workspace tree (subject_sha256).
create table provenance (
  run_id         text primary key references runs (run_id) on delete cascade,
  envelope       json not null,
  keyid          text not null,
  subject_sha256 text not null check (subject_sha256 ~ '^[0-9a-f]{64}$'),
  recorded_at    timestamptz not null default now()
);
`,
  },
  {
    version: 13,
    name: 'run policies by reference',
    sql: `
-- A run's own policy (the layers its starter stacks on the worker's floor), stored by the client that starts
-- the run, by the digest the run's Temporal history carries instead of the spec. Not an effective policy
-- (those are in policies): nothing here has been checked against a floor. Content-addressed like policies:
-- a row edited after the fact no longer matches its name, and workers refuse it.
create table run_policies (
  digest      text primary key check (digest ~ '^[0-9a-f]{64}$'),
  spec        jsonb not null,
  recorded_at timestamptz not null default now()
);
`,
  },
  {
    version: 14,
    name: 'workspace claims',
    sql: `
-- The folder each run works in (a contract's path, as the worker resolved it), per task queue: a run starts
-- in a folder only when no running run of its queue works in it, in a folder inside it or in one around it.
-- A claim outlives its run; a finished run's claim is simply taken over.
create table workspace_claims (
  task_queue text not null,
  path       text not null check (path like '/%'),
  run_id     text not null references runs (run_id) on delete cascade,
  claimed_at timestamptz not null default now(),
  primary key (task_queue, path)
);
create index workspace_claims_run on workspace_claims (run_id);
`,
  },
  {
    version: 15,
    name: 'run namespaces',
    sql: `
-- The Temporal namespace a run's workflow runs in, as its worker saw it at the start (null for runs recorded
-- before): a worker takes a running run its own namespace no longer has for a lost one, and records its end.
alter table runs add column namespace text;
`,
  },
  {
    version: 16,
    name: 'workspace restores',
    sql: `
-- A worker that found a run's workspace missing (another machine, or this one after its disk was lost)
-- restored it from the store and checked its hash: recorded as a row of kind restore, with the tree it laid
-- out (the one history recorded) and the machine in detail, so that a person reading the run sees where it
-- moved.
alter table workspace_snapshots drop constraint workspace_snapshots_kind_check;
alter table workspace_snapshots add constraint workspace_snapshots_kind_check
  check (kind in ('start', 'tool', 'gate', 'outside-edit', 'restore'));
`,
  },
  {
    version: 17,
    name: 'mcp definitions as written',
    sql: `
-- A definition is what an MCP server said, and JSON lets its strings hold a NUL character or a lone
-- surrogate, which jsonb refuses: such a server failed every run that listed it. json keeps the text exactly
-- (the digest is of the canonical form, so rows already stored still match).
alter table mcp_definitions alter column definition type json using definition::json;
`,
  },
  {
    version: 18,
    name: 'mcp calls not made again',
    sql: `
-- A call on the run's noRetry list that a lost worker cut off is not made again: its row says interrupted.
alter table mcp_calls drop constraint mcp_calls_status_check;
alter table mcp_calls add constraint mcp_calls_status_check
  check (status in ('ok', 'error', 'withheld', 'unavailable', 'timed-out', 'cancelled', 'interrupted'));
`,
  },
]

export interface MigrationReport {
  /** Migrations this call applied, in order (empty: nothing was pending). */
  applied: Array<{ version: number; name: string }>
  /** The schema version after this call. */
  version: number
  /**
   * Versions recorded in the database that this build does not know (a newer tether migrated it). Tolerated
   * so that old workers keep running during a rolling upgrade; migrations only ever add.
   */
  newer: number[]
}

/** Any two 32-bit keys unlikely to collide with another application's advisory locks. */
const LOCK_KEYS = [0x7e7e7, 4] as const

const LEDGER = 'tether_migrations'

export function checksum(migration: Migration): string {
  return createHash('sha256').update(migration.sql).digest('hex')
}

/**
 * Applies the pending migrations in one transaction under an advisory lock. Re-running is a no-op; two
 * callers at once serialise on the lock, and the second finds nothing pending.
 */
export async function applyMigrations(
  client: pg.ClientBase,
  known: readonly Migration[] = migrations,
): Promise<MigrationReport> {
  // Every CLI command and worker start opens the audit: a database already at this build's schema is one
  // read, without the transaction and the lock (five round trips a person waits for on each command).
  const current = await alreadyApplied(client, known)
  if (current) return current
  await client.query('begin')
  try {
    await client.query('select pg_advisory_xact_lock($1, $2)', [...LOCK_KEYS])
    await client.query(
      `create table if not exists ${LEDGER} (
         version    integer primary key,
         name       text not null,
         checksum   text not null,
         applied_at timestamptz not null default now()
       )`,
    )
    const { rows } = await client.query<{ version: number; name: string; checksum: string }>(
      `select version, name, checksum from ${LEDGER} order by version`,
    )
    const recorded = new Map(rows.map((row) => [row.version, row]))
    const applied: MigrationReport['applied'] = []
    for (const migration of known) {
      const previous = recorded.get(migration.version)
      if (previous) {
        if (previous.checksum !== checksum(migration)) {
          throw new AuditMigrationError(
            `audit migration ${migration.version} (${migration.name}) differs from the one applied to this database; ` +
              'restore the original migration and add the change as a new version',
          )
        }
        continue
      }
      await client.query(migration.sql)
      await client.query(`insert into ${LEDGER} (version, name, checksum) values ($1, $2, $3)`, [
        migration.version,
        migration.name,
        checksum(migration),
      ])
      applied.push({ version: migration.version, name: migration.name })
    }
    await client.query('commit')
    return report(applied, rows, known)
  } catch (error) {
    await client.query('rollback').catch(() => {})
    throw error
  }
}

/**
 * The report when every migration this build knows is recorded with its checksum; undefined otherwise (no
 * ledger yet, one pending, one that differs), for the locked path to apply them or say what is wrong.
 */
async function alreadyApplied(
  client: pg.ClientBase,
  known: readonly Migration[],
): Promise<MigrationReport | undefined> {
  let rows: Array<{ version: number; checksum: string }>
  try {
    ;({ rows } = await client.query<{ version: number; checksum: string }>(
      `select version, checksum from ${LEDGER} order by version`,
    ))
  } catch {
    return undefined
  }
  const recorded = new Map(rows.map((row) => [row.version, row.checksum]))
  return known.every((migration) => recorded.get(migration.version) === checksum(migration))
    ? report([], rows, known)
    : undefined
}

function report(
  applied: MigrationReport['applied'],
  rows: ReadonlyArray<{ version: number }>,
  known: readonly Migration[],
): MigrationReport {
  const knownVersions = new Set(known.map((m) => m.version))
  const newer = rows.map((row) => row.version).filter((version) => !knownVersions.has(version))
  const version = Math.max(0, ...rows.map((row) => row.version), ...known.map((m) => m.version))
  return { applied, version, newer }
}
