import { ExactlyError } from "@exactly/core";

/**
 * A row Postgres refused, or would refuse: names the column (when known) and the SQLSTATE.
 * It reaches the job as the cause of a `RecordWriteError`, which names the record's source
 * position. Values the sink can check before sending (a number out of an integer column's
 * range, a NUL in text, a string that is not a uuid) are refused with the SQLSTATE the server
 * would give.
 */
export class RowRejectedError extends ExactlyError {
  readonly column: string | undefined;
  readonly sqlstate: string | undefined;
  constructor(column: string | undefined, sqlstate: string | undefined, message: string, options?: ErrorOptions) {
    const where = column === undefined ? "" : `column ${JSON.stringify(column)}: `;
    super("ROW_REJECTED", `${where}${message}${sqlstate ? ` (SQLSTATE ${sqlstate})` : ""}`, options);
    this.column = column;
    this.sqlstate = sqlstate;
  }
}
