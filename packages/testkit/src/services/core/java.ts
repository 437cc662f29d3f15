// Java and Maven for the services and tools that run on the JVM (Kafka, its tools, the
// benchmark's Flink reference): Debian's packages when the machine has none.

import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { aptTool } from "./apt.ts";
import { cacheDir, logFile } from "./paths.ts";
import { capture, type Progress, run, which } from "./proc.ts";

/** Major version of a `java` (8 for "1.8.0_x"), or undefined if it prints none. */
async function javaMajor(java: string): Promise<number | undefined> {
  const result = await capture(java, ["-version"]);
  const match = /version "(\d+)(?:\.(\d+))?/.exec(result.stderr + result.stdout);
  if (!match) return undefined;
  const major = Number(match[1]);
  return major === 1 ? Number(match[2]) : major;
}

/** A Java 17+ runtime (Kafka 4 needs 17): the one on PATH, else Debian's default JRE. */
export async function ensureJava(log: string, progress: Progress): Promise<string> {
  const recent = async (java: string) => ((await javaMajor(java)) ?? 0) >= 17;
  const java = await aptTool("java", ["default-jre-headless"], recent, log, progress);
  if (java) return java;
  const found = which("java");
  const major = found ? await javaMajor(found) : undefined;
  throw new Error(`Kafka 4 needs Java 17 or newer; found ${major ?? "none"} (${found ?? "no java on PATH"})`);
}

export async function ensureMaven(log: string, progress: Progress): Promise<string> {
  const mvn = await aptTool("mvn", ["maven"], async () => true, log, progress);
  if (!mvn) throw new Error("mvn not found after installing Debian's maven package");
  return mvn;
}

/** The maven-dependency-plugin version every resolution here uses. */
const DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1";

/**
 * Resolves the runtime dependencies of a `pom` (a POM of packaging "pom" listing them) from
 * Maven Central into `<dir>/libs`, once: a marker file records that it finished, so a run cut
 * short resolves again. `expectedJar` is the prefix of a jar that must be among them.
 */
export async function resolveJars(
  pom: string,
  dir: string,
  expectedJar: string,
  log: string,
  progress: Progress,
): Promise<string> {
  const libs = join(dir, "libs");
  const marker = join(dir, "installed");
  if (existsSync(marker)) return libs;
  const mvn = await ensureMaven(log, progress);
  progress(`resolving ${expectedJar} and its dependencies from Maven Central into ${libs}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "pom.xml"), pom);
  await run(
    mvn,
    [
      "-B",
      "--no-transfer-progress",
      `-Dmaven.repo.local=${join(cacheDir, "m2")}`,
      `${DEPENDENCY_PLUGIN}:copy-dependencies`,
      "-DincludeScope=runtime",
      `-DoutputDirectory=${libs}`,
    ],
    { log, cwd: dir, progress, heartbeat: `still resolving ${expectedJar}` },
  );
  if (!readdirSync(libs).some((jar) => jar.startsWith(expectedJar))) {
    throw new Error(`Maven finished but ${libs} has no ${expectedJar} jar; see ${log}`);
  }
  writeFileSync(marker, `${new Date().toISOString()}\n`);
  return libs;
}

/** A JDK's compiler (javac 17+), for Maven builds: the one on PATH, else Debian's default JDK. */
async function ensureJdk(log: string, progress: Progress): Promise<void> {
  const recent = async (javac: string) => {
    const match = /javac (\d+)/.exec((await capture(javac, ["-version"])).stdout);
    return Number(match?.[1] ?? 0) >= 17;
  };
  if (!(await aptTool("javac", ["default-jdk-headless"], recent, log, progress))) {
    throw new Error("javac 17 or newer not found after installing Debian's default-jdk-headless");
  }
}

/** A Java runtime and the classpath of a built project (its jar first, then its runtime dependencies). */
export interface JavaProject {
  readonly java: string;
  readonly classpath: string;
}

/**
 * Builds a Maven project whose jar is `<artifactId>-<version>.jar`, once per version of its
 * `sources` (paths under `projectDir`, the pom first), into the machine-wide cache: the
 * repository stays free of build output, and a clone does not build it again.
 */
export async function buildJavaProject(
  projectDir: string,
  sources: readonly string[],
  jarName: string,
  progress: Progress = () => {},
): Promise<JavaProject> {
  const log = logFile("java-projects");
  const java = await ensureJava(log, progress);
  const hash = createHash("sha256");
  for (const file of sources) hash.update(file).update(readFileSync(join(projectDir, file)));
  const buildDir = join(cacheDir, "java-projects", `${basename(jarName, ".jar")}-${hash.digest("hex").slice(0, 12)}`);
  const classpathFile = join(buildDir, "target", "classpath.txt");
  if (!existsSync(classpathFile)) {
    await ensureJdk(log, progress);
    const mvn = await ensureMaven(log, progress);
    for (const file of sources) {
      mkdirSync(dirname(join(buildDir, file)), { recursive: true });
      copyFileSync(join(projectDir, file), join(buildDir, file));
    }
    progress(`building ${jarName} with Maven in ${buildDir}`);
    await run(
      mvn,
      [
        "-B",
        "--no-transfer-progress",
        `-Dmaven.repo.local=${join(cacheDir, "m2")}`,
        "package",
        `${DEPENDENCY_PLUGIN}:build-classpath`,
        "-Dmdep.outputFile=target/classpath.txt",
        "-DincludeScope=runtime",
      ],
      { log, cwd: buildDir, progress, heartbeat: `still building ${jarName}` },
    );
  }
  const dependencies = readFileSync(classpathFile, "utf8").trim();
  return { java, classpath: `${join(buildDir, "target", jarName)}:${dependencies}` };
}
