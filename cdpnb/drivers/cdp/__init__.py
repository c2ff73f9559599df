"""The Chrome DevTools Protocol driver and what only it needs: the attach sequence for
pages, popups and OOPIFs, the Fetch dialog bridge, the evaluator, input, the
accessibility tree and its refs, screenshots, the browser's own log."""
