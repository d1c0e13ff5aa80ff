set -eu
cmp -s run.sh "$TESTS_DIR/run.sh" && cmp -s check_env.py "$TESTS_DIR/check_env.py" || { echo "scripts were changed"; exit 1; }
test "$(bash run.sh)" = "config ok" || { echo "run.sh does not print config ok"; exit 1; }
values=$(set -a; . ./.env; set +a; echo "$APP_NAME|$WORKERS|$LOG_LEVEL|$DATABASE_URL")
test "$values" = "shop|4|info|sqlite:///data/app.db" || { echo "wrong values: $values"; exit 1; }
echo ok
