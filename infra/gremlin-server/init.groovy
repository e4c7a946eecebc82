// Binds the traversal source `g` over the graph `graph` of gremlin-server.yaml.
def globals = [:]
globals << [g : traversal().withEmbedded(graph)]
