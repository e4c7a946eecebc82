#!/usr/bin/env bash
# Apache TinkerPop Gremlin Server with TinkerGraph, from Maven Central, into
#   $KGEVAL_SERVERS_DIR/gremlin-server/<version>/lib/*.jar
# Maven Central holds gremlin-server as a jar, not the zip distribution, so a small generated pom
# names what the server needs (gremlin-server, tinkergraph-gremlin, gremlin-groovy for the
# loader script, a logging binding) and `mvn dependency:copy-dependencies` gathers the jars.
# The version matches the gremlinpython kgeval pins in its minor (3.8): gremlinpython 3.8.2 is on
# PyPI, but Maven Central has no gremlin-server 3.8.2, so 3.8.1, the newest there. Start it with
#   java -cp "$KGEVAL_SERVERS_DIR/gremlin-server/<version>/lib/*" \
#        org.apache.tinkerpop.gremlin.server.GremlinServer infra/gremlin-server/gremlin-server.yaml
# (the tests do, on a free port). Run through infra/servers/install.sh, or alone; idempotent.
set -euo pipefail
version="${KGEVAL_GREMLIN_SERVER_VERSION:-3.8.1}"
root="${KGEVAL_SERVERS_DIR:-$HOME/.cache/kgeval/servers}/gremlin-server"
target="$root/$version"
if [ -f "$target/INSTALLED" ]; then
    echo "gremlin-server $version: $target/lib (already installed)"
    exit 0
fi
command -v mvn >/dev/null || { echo "install-gremlin-server.sh: mvn is not installed (apt-get install maven)" >&2; exit 2; }
mkdir -p "$root"
tmp="$(mktemp -d "$root/.download.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgeval</groupId>
  <artifactId>gremlin-server-install</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.tinkerpop</groupId><artifactId>gremlin-server</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.tinkerpop</groupId><artifactId>tinkergraph-gremlin</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.tinkerpop</groupId><artifactId>gremlin-groovy</artifactId><version>$version</version></dependency>
    <dependency><groupId>ch.qos.logback</groupId><artifactId>logback-classic</artifactId><version>1.3.15</version></dependency>
  </dependencies>
</project>
POM
mvn -q -B -f "$tmp/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/lib"
# moved into place whole, then marked: a cut download never passes for an installed server
rm -rf "$target"
mv "$tmp/lib" "$target.part"
mkdir -p "$target"
mv "$target.part" "$target/lib"
echo "$version" > "$target/INSTALLED"
echo "gremlin-server $version: $target/lib"
