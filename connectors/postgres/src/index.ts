export { FENCE_TABLE, MARKER_TABLE, PROGRESS_TABLE } from "./bookkeeping.ts";
export { COLUMN_TYPES, type ColumnType } from "./column-types.ts";
export type { DeadLetterOptions } from "./dead-letters.ts";
export { RowRejectedError } from "./errors.ts";
export { type PostgresLingeringOptions, PostgresLingeringTransactions } from "./lingering.ts";
export type { PostgresSinkOptions } from "./options.ts";
export {
  connectPostgres,
  type PgClientSource,
  type PostgresConnectionOptions,
} from "./pg/pg-connection.ts";
export { PostgresAtLeastOnceSink, type PostgresAtLeastOnceSinkOptions } from "./postgres-at-least-once-sink.ts";
export {
  PostgresConditionalRecord,
  type PostgresConditionalRecordOptions,
  RECORD_TABLE,
} from "./postgres-conditional-record.ts";
export {
  isTransientPostgresError,
  type PostgresConnection,
  type QueryResult,
  ServerError,
  sqlstateOf,
} from "./postgres-connection.ts";
export { type PostgresSink, type PostgresSinkFactoryOptions, postgresSink } from "./postgres-sink.ts";
export {
  type PostgresTransaction,
  PostgresTwoPhaseSink,
  type PostgresTwoPhaseSinkOptions,
} from "./postgres-two-phase-sink.ts";
export { PostgresWriteAheadSink, type PostgresWriteAheadSinkOptions } from "./postgres-write-ahead-sink.ts";
export { gidOf, listPrepared, type PreparedName, parseGid } from "./prepared-transactions.ts";
export { qualifiedName, quoteIdentifier } from "./sql.ts";
export type { ColumnMapping, TableMapping } from "./table-mapping.ts";
