"""OpenLineage in and out: the endpoint, the journal, the graph join, emitting and conformance."""
