"""Launch or attach backends: Debian Chromium, headless-shell, Chromium with Playwright or
Puppeteer attached, the inspectors of node, Deno and Bun (WIP), Lightpanda, chromium-bidi's
WebDriver BiDi server over Chromium, Firefox ESR (WebDriver BiDi), the WebDriver servers
WebKitWebDriver (under an Xvfb of cdpnb's) and chromedriver (classic, or BiDi through its
own mapper), and Chromium driven by a Selenium session."""

from cdpnb.backends.bidi_mapper import ChromiumBidiProcess
from cdpnb.backends.bun import BunProcess, find_bun
from cdpnb.backends.chromium import CHROMIUM_FLAGS, BrowserProcess, find_executable
from cdpnb.backends.deno import DenoProcess, find_deno
from cdpnb.backends.firefox import FIREFOX_PREFS, FirefoxProcess, find_firefox
from cdpnb.backends.kinds import (
    BACKEND_KINDS,
    BIDI_KINDS,
    CLASSIC_KINDS,
    LAUNCHABLE,
    RUNTIME_KINDS,
    WEBDRIVER_SERVER_KINDS,
    WIP_KINDS,
    BackendKind,
    backend_available,
    backend_kind,
    kind_protocol,
)
from cdpnb.backends.launch import Backend, launch
from cdpnb.backends.lightpanda import LightpandaProcess, find_lightpanda
from cdpnb.backends.node import NodeProcess, find_node
from cdpnb.backends.playwright_attach import PlaywrightAttachment
from cdpnb.backends.puppeteer_attach import PuppeteerProcess
from cdpnb.backends.selenium_attach import SeleniumProcess
from cdpnb.backends.webdriver_servers import ChromedriverProcess, WebKitWebDriverProcess
from cdpnb.backends.xvfb import XvfbProcess

__all__ = [
    "BACKEND_KINDS",
    "BIDI_KINDS",
    "CHROMIUM_FLAGS",
    "CLASSIC_KINDS",
    "FIREFOX_PREFS",
    "LAUNCHABLE",
    "RUNTIME_KINDS",
    "WEBDRIVER_SERVER_KINDS",
    "WIP_KINDS",
    "Backend",
    "BackendKind",
    "BrowserProcess",
    "BunProcess",
    "ChromedriverProcess",
    "ChromiumBidiProcess",
    "DenoProcess",
    "FirefoxProcess",
    "LightpandaProcess",
    "NodeProcess",
    "PlaywrightAttachment",
    "PuppeteerProcess",
    "SeleniumProcess",
    "WebKitWebDriverProcess",
    "XvfbProcess",
    "backend_available",
    "backend_kind",
    "find_bun",
    "find_deno",
    "find_executable",
    "find_firefox",
    "find_lightpanda",
    "find_node",
    "kind_protocol",
    "launch",
]
