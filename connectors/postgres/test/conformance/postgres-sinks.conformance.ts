/**
 * The Postgres sinks' conformance definitions (two-phase, write-ahead and at-least-once, all
 * appending, so a duplicate would show). The suite's child process loads this module for `createSink`; the
 * test process uses the definitions. Each scenario writes a table of its own and names its
 * sink after the scenario's scope, so prepared transactions of two scenarios never meet.
 */
import type { ConformanceDefinition, ConformanceRecord, ScenarioScope, SinkFactoryContext } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { postgresSink } from "../../src/index.ts";
import {
  committedIds,
  createRecordsTable,
  dropTable,
  preparedUnder,
  RECORD_COLUMNS,
  rollbackPreparedUnder,
  tableNameFor,
  withClient,
} from "../helpers.ts";

type Kind = "two-phase" | "write-ahead" | "at-least-once";

interface PostgresConformanceOptions {
  readonly url: string;
  readonly kind: Kind;
}

const tableOf = (scope: ScenarioScope) => tableNameFor(scope.id);
const nameOf = (scope: ScenarioScope) => `c-${scope.id}`;

export function createSink(context: SinkFactoryContext<PostgresConformanceOptions>) {
  return postgresSink<ConformanceRecord>({
    connection: context.options.url,
    ...(context.options.kind === "at-least-once"
      ? { guarantee: DeliveryGuarantee.AT_LEAST_ONCE }
      : { guarantee: DeliveryGuarantee.EXACTLY_ONCE, exactlyOnce: context.options.kind }),
    name: nameOf(context.scope),
    table: {
      table: tableOf(context.scope),
      columns: [...RECORD_COLUMNS],
      write: "append",
    },
    // Small write-outs, so kills land between several statements of one transaction.
    flushRows: 500,
    // A killed child's session may outlive it by a moment; the next run waits for its lock.
    nameLockWaitMs: 10_000,
  })();
}

export function postgresDefinition(url: string, kind: Kind): ConformanceDefinition<PostgresConformanceOptions> {
  return {
    name: `postgres ${kind} sink`,
    sinkModule: new URL(import.meta.url),
    sinkOptions: { url, kind },
    guarantee: kind === "at-least-once" ? DeliveryGuarantee.AT_LEAST_ONCE : DeliveryGuarantee.EXACTLY_ONCE,
    lifecycle: kind === "two-phase" ? "two-phase-commit" : kind === "write-ahead" ? "write-ahead" : "flush",
    ...(kind === "at-least-once"
      ? {}
      : { capabilities: { rescale: true, abortsLingering: true, atomicCommits: true } }),
    setup: (scope) => createRecordsTable(url, tableOf(scope)),
    async teardown(scope) {
      await rollbackPreparedUnder(url, nameOf(scope));
      await dropTable(url, tableOf(scope));
      await withClient(url, async (c) => {
        await c.query("DELETE FROM exactly_prepared_markers WHERE sink = $1", [nameOf(scope)]).catch(() => {});
        await c.query("DELETE FROM exactly_progress WHERE sink = $1", [nameOf(scope)]).catch(() => {});
      });
    },
    readCommitted: (scope) => committedIds(url, tableOf(scope)),
    probeLingering: async (scope) =>
      (await preparedUnder(url, nameOf(scope))).map((gid) => `prepared transaction ${gid}`),
  };
}
