"""The gateway's log hygiene hooks every log record of its process (mcp_bridge/log_hygiene.py). Dagster runs in
that process too (in-line audited runs), and its records are not always plain: a log call must never fail, and a
structured error still becomes one line with its code."""

import logging

from ade_platform.lib.errors import CodedError
from mcp_bridge import log_hygiene


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_odd_records_are_made_and_coded_errors_become_one_line() -> None:
    log_hygiene.install(workspace=())
    factory = logging.getLogRecordFactory()
    # A record whose level number is missing (as Dagster's log manager may make one) is still made.
    odd = factory("dagster.builtin", None, __file__, 1, "step failed", None, None)
    assert odd.getMessage() == "step failed"

    logger = logging.getLogger("fastmcp.test_log_hygiene")
    capture = _Capture()
    logger.addHandler(capture)
    try:
        try:
            raise CodedError("invalid_regex", "the pattern does not compile")
        except CodedError:
            logger.exception("Error calling tool 'x'")
    finally:
        logger.removeHandler(capture)
    (record,) = capture.records
    assert record.exc_info is None and "invalid_regex" in record.getMessage()
