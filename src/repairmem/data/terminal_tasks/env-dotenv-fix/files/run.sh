#!/bin/bash
set -e
set -a
. ./.env
set +a
python3 check_env.py
