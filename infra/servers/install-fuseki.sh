#!/usr/bin/env bash
# Apache Jena Fuseki (the standalone server jar, `jena-fuseki-server`, shaded: one runnable jar)
# from Maven Central into $KGEVAL_SERVERS_DIR/fuseki/<version>/fuseki-server.jar.
# 5.6.0 is the newest Fuseki that runs on Java 17 (Jena 6 needs Java 21).
# Run through infra/servers/install.sh, or alone; idempotent.
set -euo pipefail
version="${KGEVAL_FUSEKI_VERSION:-5.6.0}"
root="${KGEVAL_SERVERS_DIR:-$HOME/.cache/kgeval/servers}/fuseki"
target="$root/$version/fuseki-server.jar"
if [ -s "$target" ]; then
    echo "fuseki $version: $target (already installed)"
    exit 0
fi
mkdir -p "$root/$version"
tmp="$(mktemp -d "$root/.download.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="org.apache.jena:jena-fuseki-server:$version:jar" \
    -DoutputDirectory="$tmp" -Dmdep.stripVersion=true
# written under a temporary name and renamed: a cut download never passes for an installed jar
mv "$tmp/jena-fuseki-server.jar" "$target.part"
mv "$target.part" "$target"
echo "fuseki $version: $target"
