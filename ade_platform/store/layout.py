"""How an asset's files are laid out under a store root (shared by the writer, the reader and the S3 root)."""

DATA_FILE = "data.json"
PROVENANCE_FILE = "provenance.json"
POINTER_FILE = "LATEST"
VERSIONS_DIR = "versions"
