"""Launch or attach backends: Debian Chromium, headless-shell, Chromium with Playwright or
Puppeteer attached, the inspectors of node, Deno and Bun (WIP), Lightpanda, chromium-bidi's
WebDriver BiDi server over Chromium, and Firefox ESR (WebDriver BiDi)."""

from cdpnb.backends.bidi_mapper import ChromiumBidiProcess
from cdpnb.backends.bun import BunProcess, find_bun
from cdpnb.backends.chromium import CHROMIUM_FLAGS, BrowserProcess, find_executable
from cdpnb.backends.deno import DenoProcess, find_deno
from cdpnb.backends.firefox import FIREFOX_PREFS, FirefoxProcess, find_firefox
from cdpnb.backends.launch import (
    BIDI_KINDS,
    LAUNCHABLE,
    RUNTIME_KINDS,
    WIP_KINDS,
    Backend,
    backend_available,
    kind_protocol,
    launch,
)
from cdpnb.backends.lightpanda import LightpandaProcess, find_lightpanda
from cdpnb.backends.node import NodeProcess, find_node
from cdpnb.backends.playwright_attach import PlaywrightAttachment
from cdpnb.backends.puppeteer_attach import PuppeteerProcess

__all__ = [
    "BIDI_KINDS",
    "CHROMIUM_FLAGS",
    "FIREFOX_PREFS",
    "LAUNCHABLE",
    "RUNTIME_KINDS",
    "WIP_KINDS",
    "Backend",
    "BrowserProcess",
    "BunProcess",
    "ChromiumBidiProcess",
    "DenoProcess",
    "FirefoxProcess",
    "LightpandaProcess",
    "NodeProcess",
    "PlaywrightAttachment",
    "PuppeteerProcess",
    "backend_available",
    "find_bun",
    "find_deno",
    "find_executable",
    "find_firefox",
    "find_lightpanda",
    "find_node",
    "kind_protocol",
    "launch",
]
