"""Launch or attach backends: Debian Chromium, headless-shell, Chromium with Playwright
attached, and node's inspector."""

from cdpnb.backends.chromium import CHROMIUM_FLAGS, BrowserProcess, find_executable
from cdpnb.backends.launch import LAUNCHABLE, Backend, backend_available, launch
from cdpnb.backends.node import NodeProcess, find_node
from cdpnb.backends.playwright_attach import PlaywrightAttachment

__all__ = [
    "CHROMIUM_FLAGS",
    "LAUNCHABLE",
    "Backend",
    "BrowserProcess",
    "NodeProcess",
    "PlaywrightAttachment",
    "backend_available",
    "find_executable",
    "find_node",
    "launch",
]
