"""fakesnow's server with the session features of the Snowflake stand-in (LAST_QUERY_ID, DESCRIBE RESULT,
dynamic PIVOT, compilation errors at once: ade_platform/emulators/snowflake/session_features.py), for the tests:

    python -m tests.fakes.fakesnow_server --port PORT
"""

from __future__ import annotations

import argparse

from ade_platform.emulators.snowflake.session_features import fakesnow_app, install


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    install()
    import uvicorn

    uvicorn.run(fakesnow_app(), host="127.0.0.1", port=args.port, log_level="info")


if __name__ == "__main__":
    main()
