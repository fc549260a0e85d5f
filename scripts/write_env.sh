#!/usr/bin/env bash
# Writes .env in the current folder from .env.example, with fresh secrets, unless it exists; adds
# an SSH_KEY_SECRET to one that lacks it. Either way .env ends readable by its owner only.
set -euo pipefail
# .env holds SECRET_KEY and SSH_KEY_SECRET: readable by its owner only (an older one too).
if [ ! -f .env ]; then
  (umask 077; : > .env)
  key=$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')
  sed "s|^SECRET_KEY=.*|SECRET_KEY=${key}|" .env.example >> .env
  echo "== wrote .env with a fresh SECRET_KEY"
fi
if ! grep -q '^SSH_KEY_SECRET=.' .env; then
  # The Fernet key that encrypts the dashboard's SSH private key in the database.
  ssh_secret=$(python3 -c 'import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())')
  sed -i '/^SSH_KEY_SECRET=/d' .env
  echo "SSH_KEY_SECRET=${ssh_secret}" >> .env
  echo "== added a fresh SSH_KEY_SECRET to .env"
fi

chmod 600 .env
