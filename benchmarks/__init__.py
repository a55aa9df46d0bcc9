"""Performance benchmarks (`make bench`); figures in benchmarks/README.md."""
