set -e
python3 tools/gen_version.py
python3 - <<'EOF'
from pathlib import Path
p = Path("pollster/__main__.py")
text = p.read_text()
text = text.replace('import argparse\n', 'import argparse\nimport json\n')
text = text.replace('    p.add_argument("file")\n',
                    '    p.add_argument("file")\n    p.add_argument("--json", action="store_true")\n')
text = text.replace('    if args.command == "tally":\n',
                    '    if args.command == "tally" and args.json:\n'
                    '        print(json.dumps(tally(read_votes(args.file))))\n'
                    '    elif args.command == "tally":\n')
p.write_text(text)
EOF
python3 -m pollster tally --json ballots/spring.txt
