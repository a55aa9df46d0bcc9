"""BI dashboards (Looker, Metabase) as plain data: the shapes the clients return and the store publishes, the
warehouse tables a tile reads, and running a dashboard's tiles with bounded concurrency."""
