set -e
cd reports
for f in report_[0-9][0-9]-[0-9][0-9]-[0-9][0-9][0-9][0-9].txt; do
  new=$(echo "$f" | sed -E 's/^report_([0-9]{2})-([0-9]{2})-([0-9]{4})\.txt$/report_\3-\1-\2.txt/')
  mv "$f" "$new"
done
