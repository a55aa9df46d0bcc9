"""Incidents: one per root cause, with a lifecycle, grouped from what detection finds (docs/INCIDENTS.md).

`model.py` the incident and its lifecycle (a fold of events), `grouping.py` findings -> events with the bounds,
`detect.py` the findings the store shows now, `webhooks.py` the push to people. Persistence is
`ade_platform/store/incidents.py`. No Dagster, no MCP here.
"""
