"""The dbt toolsets: dbt-artifacts (`artifacts.py`, answers from the artifact snapshots) and dbt-project
(`project.py`, the project's files), and where both get their inputs (`inputs.py`)."""
