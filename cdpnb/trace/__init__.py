"""Traces: crash-safe JSONL recording, reading back, DataFrames and offline replay."""

from cdpnb.trace.comparison import compare
from cdpnb.trace.format import TRACE_VERSION, TraceFormatError
from cdpnb.trace.reader import TraceTruncatedWarning
from cdpnb.trace.recorder import Recorder
from cdpnb.trace.redaction import REDACTIONS
from cdpnb.trace.trace import Trace

__all__ = [
    "REDACTIONS",
    "TRACE_VERSION",
    "Recorder",
    "Trace",
    "TraceFormatError",
    "TraceTruncatedWarning",
    "compare",
]
