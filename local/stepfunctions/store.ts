import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type SQLOutputValue } from 'node:sqlite';

/**
 * Executions and their histories, in SQLite under the data directory: Step
 * Functions never forgets an execution, so a restarted emulator still
 * answers for every execution it ever started, and finds the ones that were
 * running when it stopped. Writes are synchronous, so whatever the API
 * answered is already on disk if the process dies right after.
 */

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface ExecutionRecord {
  readonly executionArn: string;
  readonly stateMachineArn: string;
  readonly name: string;
  readonly input: string;
  readonly startDate: number;
  readonly traceHeader?: string;
  status: ExecutionStatus;
  output?: string;
  error?: string;
  cause?: string;
  stopDate?: number;
  /** How often the execution was redriven (RedriveExecution) or restarted after the emulator stopped while it ran. */
  redriveCount: number;
  redriveDate?: number;
  /** Where the last redrive went on from: the top-level state that failed and the input it had. */
  redriveFrom?: RedrivePoint;
  /** The client tokens of the latest redrives (at most 10, newest last), which answer a repeated request. */
  redriveTokens?: readonly RedriveToken[];
}

export interface RedrivePoint {
  readonly stateName: string;
  /** The state's input as it entered it (JSON). */
  readonly input: string;
}

export interface RedriveToken {
  readonly token: string;
  readonly at: number;
}

export interface HistoryRecord {
  readonly id: number;
  readonly timestamp: number;
  readonly type: string;
  /** Keyed as in the API, e.g. `{ taskScheduledEventDetails: {...} }`. */
  readonly details: Record<string, unknown>;
}

type Row = Record<string, SQLOutputValue>;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS executions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    execution_arn TEXT NOT NULL UNIQUE,
    state_machine_arn TEXT NOT NULL,
    name TEXT NOT NULL,
    input TEXT NOT NULL,
    trace_header TEXT,
    start_date INTEGER NOT NULL,
    status TEXT NOT NULL,
    output TEXT,
    error TEXT,
    cause TEXT,
    stop_date INTEGER,
    redrive_count INTEGER NOT NULL DEFAULT 0,
    redrive_date INTEGER,
    redrive_from TEXT,
    redrive_tokens TEXT
  );
  CREATE INDEX IF NOT EXISTS executions_by_state_machine ON executions (state_machine_arn, seq);
  CREATE INDEX IF NOT EXISTS executions_by_status ON executions (status);
  CREATE TABLE IF NOT EXISTS history (
    execution_arn TEXT NOT NULL,
    id INTEGER NOT NULL,
    timestamp INTEGER NOT NULL,
    type TEXT NOT NULL,
    details TEXT NOT NULL,
    PRIMARY KEY (execution_arn, id)
  ) WITHOUT ROWID;
`;

const text = (value: SQLOutputValue | undefined): string | undefined =>
  value === null || value === undefined ? undefined : String(value);
const integer = (value: SQLOutputValue | undefined): number | undefined =>
  value === null || value === undefined ? undefined : Number(value);

const parsed = <T>(value: SQLOutputValue | undefined): T | undefined => {
  const json = text(value);
  return json === undefined ? undefined : (JSON.parse(json) as T);
};

/** Columns added after the first release of the store: a data directory made before them gets them on open. */
const ADDED_COLUMNS = { redrive_from: 'TEXT', redrive_tokens: 'TEXT' } as const;

function toRecord(row: Row): ExecutionRecord & { readonly seq: number } {
  const optional = <K extends string, V>(key: K, value: V | undefined) =>
    (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;
  return {
    seq: Number(row.seq),
    executionArn: String(row.execution_arn),
    stateMachineArn: String(row.state_machine_arn),
    name: String(row.name),
    input: String(row.input),
    startDate: Number(row.start_date),
    status: String(row.status) as ExecutionStatus,
    redriveCount: Number(row.redrive_count),
    ...optional('traceHeader', text(row.trace_header)),
    ...optional('output', text(row.output)),
    ...optional('error', text(row.error)),
    ...optional('cause', text(row.cause)),
    ...optional('stopDate', integer(row.stop_date)),
    ...optional('redriveDate', integer(row.redrive_date)),
    ...optional('redriveFrom', parsed<RedrivePoint>(row.redrive_from)),
    ...optional('redriveTokens', parsed<RedriveToken[]>(row.redrive_tokens)),
  };
}

export class ExecutionStore {
  private readonly db: DatabaseSync;
  private readonly lastEventIds = new Map<string, number>();
  private closed = false;

  constructor(dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.db = new DatabaseSync(join(dataDir, 'executions.sqlite'));
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;');
    this.db.exec(SCHEMA);
    const columns = new Set(
      (this.db.prepare('PRAGMA table_info(executions)').all() as Row[]).map((row) => String(row.name)),
    );
    for (const [column, type] of Object.entries(ADDED_COLUMNS)) {
      if (!columns.has(column)) this.db.exec(`ALTER TABLE executions ADD COLUMN ${column} ${type}`);
    }
  }

  insert(record: ExecutionRecord): void {
    if (this.closed) return;
    this.db
      .prepare(
        `INSERT INTO executions (execution_arn, state_machine_arn, name, input, trace_header, start_date, status, redrive_count)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        record.executionArn,
        record.stateMachineArn,
        record.name,
        record.input,
        record.traceHeader ?? null,
        record.startDate,
        record.status,
        record.redriveCount,
      );
  }

  /** Writes the fields that change while an execution runs and when it closes. */
  save(record: ExecutionRecord): void {
    if (this.closed) return;
    this.db
      .prepare(
        `UPDATE executions SET status = ?, output = ?, error = ?, cause = ?, stop_date = ?, redrive_count = ?, redrive_date = ?,
           redrive_from = ?, redrive_tokens = ?
         WHERE execution_arn = ?`,
      )
      .run(
        record.status,
        record.output ?? null,
        record.error ?? null,
        record.cause ?? null,
        record.stopDate ?? null,
        record.redriveCount,
        record.redriveDate ?? null,
        record.redriveFrom ? JSON.stringify(record.redriveFrom) : null,
        record.redriveTokens ? JSON.stringify(record.redriveTokens) : null,
        record.executionArn,
      );
  }

  get(executionArn: string): ExecutionRecord | undefined {
    const row = this.db.prepare('SELECT * FROM executions WHERE execution_arn = ?').get(executionArn) as
      | Row
      | undefined;
    return row ? toRecord(row) : undefined;
  }

  running(): ExecutionRecord[] {
    return (
      this.db.prepare("SELECT * FROM executions WHERE status = 'RUNNING' ORDER BY seq").all() as Row[]
    ).map(toRecord);
  }

  /** Newest first, as ListExecutions answers; `beforeSeq` continues a page. */
  list(
    stateMachineArn: string,
    options: { status?: ExecutionStatus; beforeSeq?: number; limit: number },
  ): (ExecutionRecord & { readonly seq: number })[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM executions
         WHERE state_machine_arn = ? AND (? IS NULL OR status = ?) AND (? IS NULL OR seq < ?)
         ORDER BY seq DESC LIMIT ?`,
      )
      .all(
        stateMachineArn,
        options.status ?? null,
        options.status ?? null,
        options.beforeSeq ?? null,
        options.beforeSeq ?? null,
        options.limit,
      ) as Row[];
    return rows.map(toRecord);
  }

  appendEvent(
    executionArn: string,
    type: string,
    details: Record<string, unknown>,
    timestamp = Date.now(),
  ): void {
    if (this.closed) return;
    const id = this.lastEventId(executionArn) + 1;
    this.db
      .prepare('INSERT INTO history (execution_arn, id, timestamp, type, details) VALUES (?, ?, ?, ?, ?)')
      .run(executionArn, id, timestamp, type, JSON.stringify(details));
    this.lastEventIds.set(executionArn, id);
  }

  /** Events in id order (or reversed), strictly after `afterId` in that order. */
  events(
    executionArn: string,
    options: { reverse: boolean; afterId?: number; limit: number },
  ): HistoryRecord[] {
    const rows = this.db
      .prepare(
        options.reverse
          ? 'SELECT * FROM history WHERE execution_arn = ? AND (? IS NULL OR id < ?) ORDER BY id DESC LIMIT ?'
          : 'SELECT * FROM history WHERE execution_arn = ? AND (? IS NULL OR id > ?) ORDER BY id ASC LIMIT ?',
      )
      .all(executionArn, options.afterId ?? null, options.afterId ?? null, options.limit) as Row[];
    return rows.map((row) => ({
      id: Number(row.id),
      timestamp: Number(row.timestamp),
      type: String(row.type),
      details: JSON.parse(String(row.details)) as Record<string, unknown>,
    }));
  }

  /**
   * The state among `stateNames` the execution entered last, with the input
   * it entered with: where a failed execution failed, when they are the
   * top-level states (which run one at a time).
   */
  lastEntered(executionArn: string, stateNames: ReadonlySet<string>): RedrivePoint | undefined {
    const rows = this.db
      .prepare(
        "SELECT details FROM history WHERE execution_arn = ? AND type LIKE '%StateEntered' ORDER BY id DESC",
      )
      .iterate(executionArn) as Iterable<Row>;
    for (const row of rows) {
      const entered = (
        JSON.parse(String(row.details)) as {
          stateEnteredEventDetails?: { name?: string; input?: string };
        }
      ).stateEnteredEventDetails;
      if (entered?.name !== undefined && stateNames.has(entered.name)) {
        return { stateName: entered.name, input: entered.input ?? '{}' };
      }
    }
    return undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  private lastEventId(executionArn: string): number {
    let last = this.lastEventIds.get(executionArn);
    if (last === undefined) {
      const row = this.db
        .prepare('SELECT MAX(id) AS last FROM history WHERE execution_arn = ?')
        .get(executionArn) as Row | undefined;
      last = Number(row?.last ?? 0);
    }
    return last;
  }
}
