import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends the run with one plain line, `N passed, N failed, N skipped`, which CI reads to
 * know how many tests ran. Above it, one `skipped:` line per skipped test with the note it
 * gave (`ctx.skip(note)`), so a skip that nobody explained stands out in the CI log.
 * Vitest's own summary stays above both.
 */
export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    const skips: string[] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state === "passed") passed++;
        else if (result.state === "failed") failed++;
        else {
          // A skip decided at registration carries its reason in its name; one decided while
          // running (an inconclusive scenario) carries it in the note.
          const note = result.state === "skipped" ? result.note : undefined;
          skips.push(`skipped: ${module.relativeModuleId} > ${test.fullName}${note ? `: ${note}` : ""}`);
        }
      }
      if (module.state() === "failed" && [...module.children.allTests()].length === 0) failed++;
    }
    const lines = skips.length > 0 ? `\n${skips.join("\n")}` : "";
    process.stdout.write(`${lines}\n${passed} passed, ${failed} failed, ${skips.length} skipped\n`);
  }
}
