#!/usr/bin/env bash
# Starts the local test services (Kafka, Postgres, Redis, a Redis Cluster, S3 on MinIO and on moto) on this machine and prints their
# endpoints. Assumes Node 24 and pnpm on PATH and the workspace's dependencies installed.
# The first run on a fresh machine installs what is missing (apt, Maven Central, Go module
# proxy or PyPI) and takes minutes; later runs reuse /var/cache/exactly-services.
#
# .ci/run calls this, then: eval "$(node packages/testkit/src/services/cli.ts env)"
#
# Usage: .ci/services.sh [kafka|postgres|redis|redis-cluster|s3|s3-moto ...]   (all by default)
set -euo pipefail
cd "$(dirname "$0")/.."

services=("$@")
if [ ${#services[@]} -eq 0 ]; then services=(kafka postgres redis redis-cluster s3 s3-moto); fi

if ! node packages/testkit/src/services/cli.ts up "${services[@]}"; then
  echo "services failed to start; logs of the failing ones follow" >&2
  for service in "${services[@]}"; do
    if ! node packages/testkit/src/services/cli.ts status "$service"; then
      log=".services/logs/$service.log"
      echo "----- last 80 lines of $log -----"
      if [ -f "$log" ]; then tail -n 80 "$log"; else echo "(no log written)"; fi
      echo "----- end of $log -----"
    fi
  done
  exit 1
fi

# The S3 secret key is masked here; .ci/run evals the real value from `cli.ts env`.
node packages/testkit/src/services/cli.ts env "${services[@]}" | sed -E 's/^(export EXACTLY_S3_SECRET_KEY=).*/\1***/'
