"""simreplay_capture: record a PyTorch input pipeline into a simreplay trace (format v1)."""
from .context import note, stage
from .manifest import __version__
from .recorder import CapturedLoader, Recorder
from .trace import Trace, TraceError, read_trace

__all__ = ["Recorder", "CapturedLoader", "stage", "note", "read_trace", "Trace", "TraceError",
           "__version__"]
