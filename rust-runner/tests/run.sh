#!/usr/bin/env bash
# The runner's test suite (`just test-runner`): unit tests, then the integration tests against a real
# Cassandra 5.0.9 that the test starts on its own ports (19042…) and always stops, shellcheck of the
# shell drivers, and a smoke of `just bench-runner`'s empty-workload half on the lab's engine (bench/),
# after the release build that it reuses.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
echo "== shellcheck" >&2
shellcheck -S warning cassandra/cassandra.sh rust-runner/cql-session.sh rust-runner/tests/run.sh
echo "== cargo test (unit + integration against Cassandra)" >&2
RUNNER_IT=1 cargo test --release --locked --manifest-path rust-runner/Cargo.toml -- --nocapture
echo "== bench-runner smoke (the empty workload on the engine)" >&2
python3 -m pytest -q rust-runner/bench
echo "== ok" >&2
