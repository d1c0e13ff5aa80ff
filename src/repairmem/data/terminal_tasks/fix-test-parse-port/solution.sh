cat > netcfg.py <<'EOF'
def parse_port(text):
    """The TCP port in text as an int; ValueError unless it is an integer in 1..65535."""
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"port out of range: {port}")
    return port
EOF
