/** The two readers that check the output: ours, and kcat (librdkafka), which shares no code with ours. */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { KafkaSource, valueAsString } from "@exactly/kafka";

/** Every committed value of `topic`, read with the connector's own read_committed source. */
export async function readCommittedValues(brokers: readonly string[], topic: string): Promise<string[]> {
  const source = new KafkaSource({ brokers, topics: [topic], stopAtLatest: true, deserializer: valueAsString });
  const reader = source.createReader({ subtask: 0, parallelism: 1, restoredPositions: undefined });
  await reader.open?.();
  const values: string[] = [];
  try {
    for (let batch = await reader.poll(1000); batch !== null; batch = await reader.poll(1000)) {
      for (const value of batch.values) if (value !== null) values.push(value);
    }
  } finally {
    await reader.close?.();
  }
  return values;
}

/** What kcat read, or why it read nothing: not installed (a check that did not run), or failed. */
export type KcatRead =
  | { readonly status: "read"; readonly values: string[] }
  | { readonly status: "not-installed" | "failed"; readonly reason: string };

/**
 * Every committed value of `topic`, read by kcat (librdkafka) with
 * `isolation.level=read_committed`. Its output is streamed line by line, so a long topic is
 * read whole (a buffered read stopped at 1 MiB of output).
 */
export function readCommittedWithKcat(brokers: readonly string[], topic: string): Promise<KcatRead> {
  const args = ["-b", brokers.join(","), "-C", "-t", topic, "-e", "-q", "-o", "beginning"];
  args.push("-X", "isolation.level=read_committed", "-f", "%s\\n");
  return new Promise((resolve) => {
    const child = spawn("kcat", args, { stdio: ["ignore", "pipe", "pipe"] });
    const values: string[] = [];
    let stderr = "";
    let settled = false;
    const finish = (read: KcatRead) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(read);
    };
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish({ status: "failed", reason: `kcat did not finish within ${KCAT_TIMEOUT_MS / 1000} s` });
    }, KCAT_TIMEOUT_MS);
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT")
        finish({ status: "not-installed", reason: "kcat is not installed (apt-get install kcat)" });
      else finish({ status: "failed", reason: `kcat could not run: ${error.message}` });
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4000) stderr += chunk.toString("utf8");
    });
    const lines = createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on("line", (line) => {
      if (line.length > 0) values.push(line);
    });
    // "close" waits for stdout to end, so every line is in before the verdict.
    child.on("close", (code, signal) => {
      if (code === 0) finish({ status: "read", values });
      else finish({ status: "failed", reason: `kcat exited with ${code ?? signal}: ${stderr.trim()}` });
    });
  });
}

const KCAT_TIMEOUT_MS = 120_000;
