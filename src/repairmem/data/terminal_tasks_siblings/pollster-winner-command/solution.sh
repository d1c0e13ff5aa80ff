set -e
python3 tools/gen_version.py
python3 - <<'EOF'
from pathlib import Path
p = Path("pollster/__main__.py")
text = p.read_text()
text = text.replace('    args = parser.parse_args(argv)\n',
                    '    w = commands.add_parser("winner", help="the choice with the most votes")\n'
                    '    w.add_argument("file")\n'
                    '    args = parser.parse_args(argv)\n'
                    '    if args.command == "winner":\n'
                    '        print(next(iter(tally(read_votes(args.file)))))\n')
p.write_text(text)
EOF
python3 -m pollster winner ballots/spring.txt
