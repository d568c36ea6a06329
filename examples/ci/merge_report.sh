#!/usr/bin/env bash
# The merge statistics of the last dbt invocation, for CI: appends `dbt-merge report` to the job
# summary ($GITHUB_STEP_SUMMARY, when set) and writes it, under a marker line that lets a later
# run find and update its pull-request comment, to a file (default merge-report.md).
#
#   bash merge_report.sh [RUN_RESULTS] [OUTPUT]
#
# RUN_RESULTS defaults to run_results.json in $DBT_TARGET_PATH, else in $DBT_PROJECT_DIR/target
# (dbt's defaults). Exits non-zero only when there is no report to post (dbt did not get as far
# as writing run_results.json); a failed model is a row of the report, and the dbt step fails
# the job.
set -euo pipefail

results="${1:-${DBT_TARGET_PATH:-${DBT_PROJECT_DIR:-.}/target}/run_results.json}"
output="${2:-merge-report.md}"
marker="<!-- dbt-merge report -->"

if [[ ! -f "$results" ]]; then
  text="### dbt-merge: merge statistics

No report: $results was not written (dbt stopped before running any node; see the dbt step's log)."
  printf '%s\n%s\n' "$marker" "$text" > "$output"
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then printf '%s\n' "$text" >> "$GITHUB_STEP_SUMMARY"; fi
  echo "$text" >&2
  exit 1
fi

{
  echo "$marker"
  dbt-merge report "$results"
  if [[ -n "${GITHUB_RUN_ID:-}" ]]; then
    echo
    echo "<sub>Commit ${GITHUB_SHA:-?}, [workflow run](${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID}).</sub>"
  fi
} > "$output"
if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
  dbt-merge report "$results" --output "$GITHUB_STEP_SUMMARY"
fi
cat "$output"
