set -eu
cd reports
test "$(ls | sort | tr '\n' ' ')" = "notes.txt report_2022-07-04.txt report_2023-12-01.txt report_2024-01-31.txt report_2024-03-15.txt report_summary.txt " || { echo "wrong files: $(ls)"; exit 1; }
test "$(cat report_2024-03-15.txt)" = "report for 03-15-2024"
test "$(cat report_2023-12-01.txt)" = "report for 12-01-2023"
test "$(cat report_2022-07-04.txt)" = "report for 07-04-2022"
test "$(cat notes.txt)" = "keep me"
test "$(cat report_summary.txt)" = "summary"
echo ok
