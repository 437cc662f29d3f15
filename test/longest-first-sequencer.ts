import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds each slow test file took in a CI run (`node .ci/slowest-files.ts <report> --write
 * test/file-seconds.json` refreshes it). A fresh clone has no vitest cache, so without this
 * vitest would order files by project name and size, and the longest conformance suites of the
 * last projects (Redis, Postgres) would start last and run alone at the end.
 */
const measuredSeconds: Readonly<Record<string, number>> = JSON.parse(
  readFileSync(new URL("./file-seconds.json", import.meta.url), "utf8"),
);

/**
 * Vitest's groups in their order; within a group the server-restart tests first (the broker's,
 * the group's longest, must start at once or a worker idles while it runs alone at the group's
 * end), then every file the table knows, longest first whatever its project, then the rest in
 * vitest's order (project name, larger files first). Longest first keeps all three workers busy
 * until close to the end.
 */
export default class LongestFirstSequencer extends BaseSequencer {
  static readonly restartProjects = new Set(["services-restart"]);

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const seconds = (spec: TestSpecification) => measuredSeconds[relative(root, spec.moduleId)] ?? 0;
    const rank = (spec: TestSpecification) => (LongestFirstSequencer.restartProjects.has(spec.project.name) ? 0 : 1);
    // Array.prototype.sort is stable: files of equal rank and no measure keep vitest's order.
    return sorted.sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        rank(a) - rank(b) ||
        seconds(b) - seconds(a),
    );
  }
}
