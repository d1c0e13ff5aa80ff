set -e
python3 tools/gen_version.py
sed -i 's|^    commands = parser.add_subparsers|    parser.add_argument("--version", action="version", version=f"pollster {VERSION}")\n&|' pollster/__main__.py
python3 -m pollster --version
