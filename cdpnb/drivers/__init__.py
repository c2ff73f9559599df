"""The protocol drivers, each in a room of its own: ``cdp`` (the Chrome DevTools
Protocol), ``bidi`` (WebDriver BiDi), ``classic`` (WebDriver classic), ``wip`` (the
WebKit Inspector Protocol: CDP's driver with WIP's words). A driver does, in its
protocol's words, what the supervisor asks of a browser (``cdpnb.session.driver``'s
``ProtocolDriver``); it imports ``cdpnb.session`` and its own room only (WIP builds on
CDP's), never another driver nor the supervisor above it."""
