#!/usr/bin/env bash
# Install the Java SPARQL/Gremlin servers the tests start on 127.0.0.1 (Apache Jena Fuseki,
# Apache TinkerPop Gremlin Server), fetched from Maven Central with Maven, into
#   ${KGEVAL_SERVERS_DIR:-~/.cache/kgeval/servers}
# Idempotent: a server already installed at its pinned version is left as it is.
# Each infra/servers/install-*.sh is run in turn; each prints where its server is.
# Needs java (17+) and mvn on PATH. The tests find the servers through the same directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export KGEVAL_SERVERS_DIR="${KGEVAL_SERVERS_DIR:-$HOME/.cache/kgeval/servers}"
mkdir -p "$KGEVAL_SERVERS_DIR"
for tool in java mvn; do
    command -v "$tool" >/dev/null || { echo "install.sh: $tool is not installed (apt-get install openjdk-17-jre-headless maven)" >&2; exit 2; }
done
for script in "$here"/install-*.sh; do
    [ -e "$script" ] || continue
    bash "$script"
done
