#!/bin/sh
# install-claude.sh - installs the pinned Claude Code CLI for the agent
# tests: scripts/install-agent.sh claude (which see), kept for the
# commands the docs and older scripts name.
exec sh "$(dirname "$0")/install-agent.sh" claude
