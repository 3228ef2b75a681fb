#!/usr/bin/env bash
# Set up everything Rollbook needs (npm packages, Prisma client, engine venv, the default model).
source "$(dirname "$0")/lib.sh"
setup_all
log "setup done"
