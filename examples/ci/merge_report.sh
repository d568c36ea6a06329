#!/usr/bin/env bash
# The merge statistics of the last dbt invocation, for CI: appends `dbt-merge report` to the job
# summary ($GITHUB_STEP_SUMMARY, when set) and writes it, under a marker line that lets a later
# run find and update its pull-request comment, to a file (default merge-report.md).
#
#   bash merge_report.sh [RUN_RESULTS] [OUTPUT]
#
# RUN_RESULTS defaults to run_results.json in $DBT_TARGET_PATH, else in $DBT_PROJECT_DIR/target
# (dbt's defaults). Exits non-zero only when there is no report to post (dbt did not get as far
# as writing run_results.json, or the file is not the results of a `dbt run` or `dbt build`:
# dbt-merge's error line is posted instead); a failed model is a row of the report, and the dbt
# step fails the job.
set -euo pipefail

results="${1:-${DBT_TARGET_PATH:-${DBT_PROJECT_DIR:-.}/target}/run_results.json}"
output="${2:-merge-report.md}"
marker="<!-- dbt-merge report -->"

# no report to post: say why where the report would have gone, and fail the step
no_report() {
  local text="### dbt-merge: merge statistics

No report: $1"
  printf '%s\n%s\n' "$marker" "$text" > "$output"
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then printf '%s\n' "$text" >> "$GITHUB_STEP_SUMMARY"; fi
  echo "$text" >&2
  exit 1
}

if [[ ! -f "$results" ]]; then
  no_report "$results was not written (dbt stopped before running any node; see the dbt step's log)."
fi
# a file that is not the results of a run (another dbt command's, another dbt version's, a
# damaged one): dbt-merge's one error line, as code
errors="$(mktemp)"
trap 'rm -f "$errors"' EXIT
if ! report="$(dbt-merge report "$results" 2>"$errors")"; then
  no_report "$(printf '\n\n```text\n%s\n```' "$(cat "$errors")")"
fi

{
  echo "$marker"
  printf '%s\n' "$report"
  if [[ -n "${GITHUB_RUN_ID:-}" ]]; then
    echo
    echo "<sub>Commit ${GITHUB_SHA:-?}, [workflow run](${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID}).</sub>"
  fi
} > "$output"
if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
  dbt-merge report "$results" --output "$GITHUB_STEP_SUMMARY"
fi
cat "$output"
