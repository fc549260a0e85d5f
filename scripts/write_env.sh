#!/usr/bin/env bash
# Writes .env in the current folder from .env.example unless it exists, then fills every secret
# that is empty or missing (one copied from .env.example, as its comments invite, has them empty:
# start-up then refused it with a traceback). Either way .env ends readable by its owner only.
set -euo pipefail
if [ ! -f .env ]; then
  (umask 077; cat .env.example > .env)
  echo "== wrote .env from .env.example"
fi
chmod 600 .env

# fill NAME with the output of the python code, where .env has it empty or not at all
fill() {
  local name=$1 code=$2 value
  if ! grep -q "^${name}=." .env; then
    value=$(python3 -c "$code")
    if grep -q "^${name}=" .env; then
      sed -i "s|^${name}=.*|${name}=${value}|" .env
    else
      echo "${name}=${value}" >> .env
    fi
    echo "== filled an empty ${name} in .env with a fresh one"
  fi
}
# Django's signing key: 50 or more random characters (start-up refuses fewer).
fill SECRET_KEY 'import secrets; print(secrets.token_urlsafe(48))'
# The Fernet key that encrypts the dashboard's SSH private key in the database.
fill SSH_KEY_SECRET 'import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())'
# docker compose's PostgreSQL password (URL-safe characters: it goes into DATABASE_URL there).
fill POSTGRES_PASSWORD 'import secrets; print(secrets.token_urlsafe(24))'
