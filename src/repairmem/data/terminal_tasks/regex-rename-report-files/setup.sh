mkdir -p reports
for d in 03-15-2024 12-01-2023 01-31-2024 07-04-2022; do echo "report for $d" > "reports/report_$d.txt"; done
echo "keep me" > reports/notes.txt
echo "summary" > reports/report_summary.txt
