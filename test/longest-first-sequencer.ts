import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Vitest's order (groups, then projects by name, then larger files first), except that
 * within a group the server-restart tests come before every other project's files: they
 * share group 0 with `core` and `conformance`, and the broker's test, the longest file of
 * the group, must start at once rather than after `conformance` by name, or the second
 * worker idles while it runs alone at the group's end.
 */
export default class RestartsFirstSequencer extends BaseSequencer {
  static readonly restartProjects = new Set(["services-restart"]);

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => (RestartsFirstSequencer.restartProjects.has(spec.project.name) ? 0 : 1);
    // Array.prototype.sort is stable: everything else keeps vitest's order.
    return sorted.sort(
      (a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b),
    );
  }
}
