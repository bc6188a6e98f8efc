#!/bin/sh
set -e
git checkout stable
git pull --ff-only origin stable
entry="## $(date +%Y.%m) ..."
echo "$entry" >> docs/changelog.md
