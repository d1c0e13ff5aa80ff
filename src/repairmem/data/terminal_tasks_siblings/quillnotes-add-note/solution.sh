set -e
printf '# Standup 2024-05-02\n\n- sync moved to hourly\n' > notes/2024-05-02.md
git add notes/2024-05-02.md
git commit -q -s -m "notes: standup 2024-05-02"
