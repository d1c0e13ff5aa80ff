cat > settings.json <<'EOF'
{
  "service": "billing",
  "port": 9000,
  "hosts": ["a.internal", "b.internal"],
  "retry": {"attempts": 3, "backoff": 1.5},
  "url": "http://example.com/api",
  "enabled": true
}
EOF
