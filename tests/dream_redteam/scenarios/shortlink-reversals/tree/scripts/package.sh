#!/bin/sh
set -e
tar czf "dist/shortlink-$1.tar.gz" -C bin shortlink
