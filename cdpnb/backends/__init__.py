"""Launch or attach browser backends."""

from cdpnb.backends.chromium import CHROMIUM_FLAGS, BrowserProcess, find_executable
from cdpnb.backends.launch import Backend, launch

__all__ = ["CHROMIUM_FLAGS", "Backend", "BrowserProcess", "find_executable", "launch"]
