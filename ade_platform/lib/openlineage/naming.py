"""A dataset's namespace and name (the OpenLineage naming spec) read as a warehouse relation.

    postgres://host:port           database.schema.table
    snowflake://org-account        database.schema.table      (identifiers case-folded, as the graph keys them)
    bigquery                       project.dataset.table      (case kept)
    duckdb://<file or host>        database.schema.table      (the database is the file's stem)
    redshift://cluster.region:port, trino://, databricks://, mssql://   catalog/database.schema.table
    mysql://host:port              database.table

Files and object stores (file, s3://, gs://, abfss://, hdfs://) and anything else name no relation: such a
dataset becomes a node of its own (`openlineage:dataset:<namespace>/<name>`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ade_platform.lib.lineage.relations import RelationKey, make_key

# scheme -> the warehouse type whose relations it names (the graph's case rules follow the type)
WAREHOUSE_SCHEMES = {
    "postgres": "postgres",
    "postgresql": "postgres",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "duckdb": "duckdb",
    "redshift": "redshift",
    "trino": "trino",
    "databricks": "databricks",
    "mssql": "mssql",
    "mysql": "mysql",
    "sqlite": "sqlite",
}
_TWO_PART = {"mysql"}  # database.table
_ONE_PART = {"sqlite"}  # table


@dataclass(frozen=True)
class DatasetName:
    namespace: str
    name: str
    scheme: str  # "postgres", "bigquery", "s3", "file", ... ("" when the namespace has none)
    warehouse_type: str | None  # the type of warehouse whose relation it names, None for files
    key: RelationKey | None  # the relation, None for files


def scheme_of(namespace: str) -> str:
    head, sep, _ = namespace.partition("://")
    return (head if sep else namespace).strip().lower()


def read_dataset(namespace: str, name: str) -> DatasetName:
    scheme = scheme_of(namespace)
    wh_type = WAREHOUSE_SCHEMES.get(scheme)
    if wh_type is None:
        return DatasetName(namespace, name, scheme, None, None)
    parts = [p for p in name.split(".") if p]
    if not parts:
        return DatasetName(namespace, name, scheme, None, None)
    if scheme in _ONE_PART:
        key = make_key(None, None, parts[-1], wh_type)
    elif scheme in _TWO_PART and len(parts) == 2:
        key = make_key(parts[0], None, parts[1], wh_type)
    else:
        # the last three parts: a BigQuery project may not hold a dot, a table name rarely does
        head = [None] * max(0, 3 - len(parts)) + parts[-3:]
        if len(parts) > 3:
            head[0] = ".".join(parts[:-2])
        key = make_key(head[0], head[1], head[2] or name, wh_type)
    return DatasetName(namespace, name, scheme, wh_type, key)


def dataset_node_id(namespace: str, name: str) -> str:
    """A dataset that names no known warehouse relation (a file, a bucket, a table of an unconfigured system)."""
    return f"openlineage:dataset:{namespace}/{name}"


def job_node_id(namespace: str, name: str) -> str:
    return f"openlineage:job:{namespace}/{name}"
