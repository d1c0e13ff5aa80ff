set -e
python3 tools/gen_version.py
python3 - <<'EOF'
from pathlib import Path
p = Path("pollster/__main__.py")
text = p.read_text()
text = text.replace('    p.add_argument("file")\n',
                    '    p.add_argument("file")\n    p.add_argument("--percent", action="store_true")\n')
text = text.replace('print(f"{choice}: {votes}")',
                    'print(f"{choice}: {100 * votes / len(read_votes(args.file)):.1f}%" if args.percent '
                    'else f"{choice}: {votes}")')
p.write_text(text)
EOF
python3 -m pollster tally --percent ballots/spring.txt
