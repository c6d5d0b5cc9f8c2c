#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# prometheus.sh - the alerting rules (scripts/prometheus/xrl.rules.yml) and
# the Grafana dashboard (scripts/grafana/xrl.json), without root or xrld:
#   1. `promtool check rules`, and `promtool test rules` on
#      tests/prometheus/xrl.rules.test.yml, where every alert fires and
#      does not, and every label its annotations name is on it;
#   2. every alert has a severity, a summary, a description naming
#      docs/operations.md and a runbook anchor that is a heading there, and
#      the runbook's "Alerts" table names exactly the file's alerts;
#   3. the dashboard imports (schemaVersion, one datasource variable every
#      query uses, ids, gridPos) and each of its queries parses;
#   4. every metric name a rule or a query uses is a family xrld's source
#      writes (tests/e2e/test_prometheus.sh checks them on a real scrape).
# The checks are tests/lint/prometheus.py's; it says what each found.
#
# Exit: 0 pass, 1 fail, 77 when promtool is missing (install-deps.sh).
set -u
cd "$(dirname "$0")/../.." || exit 2
. scripts/lib/common.sh
exec "$XRL_PY" tests/lint/prometheus.py check
