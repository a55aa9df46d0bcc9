"""The scale-out profile, proven with real servers on loopback: S3-compatible object storage, PostgreSQL."""
