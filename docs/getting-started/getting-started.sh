#!/usr/bin/env bash
# Getting started, step by step, as a new user types it. A test runs this very script outside
# the repository, with EXACTLY_PACKAGES naming the packed packages instead of the registry.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# 1. A new project. The packages are ES modules only, and so are job modules: `npm init`
#    makes a CommonJS project, so make it a module project.
mkdir my-pipeline && cd my-pipeline
npm init -y > /dev/null
npm pkg set type=module

# 2. The runtime, the file connector and the `exactly` command. Node 22.12 or later.
# shellcheck disable=SC2086 # EXACTLY_PACKAGES is a list
npm install --no-audit --no-fund ${EXACTLY_PACKAGES:-@exactly/core @exactly/file @exactly/cli}

# 3. The job: save the file below as job.ts (here it is copied from beside this script).
cp "$here/job.ts" job.ts

# 4. Run it. Node strips the types of job.ts itself (no build step); stderr shows a status line.
npx exactly run job.ts

# 5. Every order is in ./out exactly once; the checkpoints say where the job stopped.
lines=$(cat out/*.jsonl | wc -l)
echo "orders written: $lines"
test "$lines" -eq 100000
npx exactly inspect checkpoints
